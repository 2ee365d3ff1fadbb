package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"svcbridge/pgtest"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestDeadlockedTransactionsAreRetried makes two transactions lock two
// router configs in opposite orders; PostgreSQL aborts one to break the
// deadlock, and InTx runs it again, so both writes land.
func TestDeadlockedTransactionsAreRetried(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		if err := tx.CreateAgent(ctx, agent("a1", "one", "edge", false), "h1"); err != nil {
			return err
		}
		return tx.CreateAgent(ctx, agent("a2", "two", "edge", false), "h2")
	})
	var wg sync.WaitGroup
	locked := make(chan struct{}, 2)
	proceed := make(chan struct{})
	write := func(first, second, doc string) error {
		attempt := 0
		return inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			attempt++
			if err := tx.WriteRouter(ctx, first, store.RouterWrite{Base: []byte(doc)}); err != nil {
				return err
			}
			if attempt == 1 { // both hold their first lock before either takes its second
				locked <- struct{}{}
				<-proceed
			}
			return tx.WriteRouter(ctx, second, store.RouterWrite{Base: []byte(doc)})
		})
	}
	errs := make([]error, 2)
	for i, order := range [][2]string{{"a1", "a2"}, {"a2", "a1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(order[0], order[1], fmt.Sprintf(`{"writer":%d}`, i))
		}()
	}
	<-locked
	<-locked
	close(proceed)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	// Both routers end with the same writer's document: one transaction
	// ran entirely after the other.
	var c1, c2 []byte
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
		if c1, err = tx.RouterConfig(ctx, "a1"); err == nil {
			c2, err = tx.RouterConfig(ctx, "a2")
		}
		return err
	})
	if string(c1) != string(c2) {
		t.Errorf("router configs %s and %s: the transactions interleaved", c1, c2)
	}
}

// TestReadsDoNotWaitForWriters: while a write transaction is open (on
// SQLite it holds the database's only write lock), a read answers at once
// from the last committed state, and a read cannot write.
func TestReadsDoNotWaitForWriters(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertService(ctx, externalService("before", 20000))
		})

		writing, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- s.InTx(context.Background(), func(tx *store.Tx) error {
				if err := tx.InsertService(context.Background(), externalService("during", 20001)); err != nil {
					return err
				}
				close(writing)
				<-release
				return nil
			})
		}()
		<-writing

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		var names []string
		err := s.Read(ctx, func(tx *store.Tx) error {
			svcs, err := tx.ListServices(ctx)
			for _, svc := range svcs {
				names = append(names, svc.Name)
			}
			return err
		})
		took := time.Since(start)
		close(release)
		if err != nil {
			t.Fatalf("read while a write is open: %v (after %s)", err, took)
		}
		if len(names) != 1 || names[0] != "before" {
			t.Errorf("read saw %v, want only the committed service", names)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		// A read transaction refuses to write.
		err = s.Read(context.Background(), func(tx *store.Tx) error {
			return tx.InsertService(context.Background(), externalService("sneaky", 20002))
		})
		if err == nil {
			t.Error("a write inside Read succeeded")
		}
	})
}

// TestReadsGetAConnectionDuringAWriteBurst: on PostgreSQL, write
// transactions filling the pool leave connections to reads, which answer
// at once instead of queueing for a connection behind the writes.
func TestReadsGetAConnectionDuringAWriteBurst(t *testing.T) {
	s, err := store.OpenPool(context.Background(), pgtest.NewDB(t), store.Pool{MaxOpen: 4, MaxIdle: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	release := make(chan struct{})
	done := make(chan error, 8)
	for i := range 8 { // twice the pool
		go func() {
			done <- s.InTx(context.Background(), func(tx *store.Tx) error {
				if err := tx.InsertService(context.Background(), externalService(fmt.Sprintf("burst-%d", i), 20000+i)); err != nil {
					return err
				}
				<-release
				return nil
			})
		}()
	}
	time.Sleep(200 * time.Millisecond) // the writers take what they can
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = s.Read(ctx, func(tx *store.Tx) error {
		_, err := tx.ListServices(ctx)
		return err
	})
	close(release)
	if err != nil {
		t.Fatalf("a read during a write burst: %v", err)
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
