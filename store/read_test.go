package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

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
	s, err := store.OpenPool(context.Background(), storetest.NewPostgresDB(t), store.Pool{MaxOpen: 4, MaxIdle: 4})
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
