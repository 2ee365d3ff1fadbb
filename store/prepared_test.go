package store_test

import (
	"context"
	"errors"
	"testing"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

// preparedCount is how many statements the transaction's connection holds
// prepared that contain part.
func preparedCount(ctx context.Context, t *testing.T, tx *store.Tx, part string) int {
	t.Helper()
	var n int
	if err := tx.Get(ctx, &n, `SELECT count(*) FROM pg_prepared_statements WHERE strpos(statement, $1) > 0`, part); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementsArePreparedOnce: on PostgreSQL a query is parsed and
// planned once per connection, not at every run.
func TestStatementsArePreparedOnce(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		if err := tx.InsertService(ctx, externalService("web", 20000)); err != nil {
			return err
		}
		// The default router's read, which every create and pass make, has
		// no arguments.
		for what, read := range map[string]func() error{
			"FROM services WHERE name": func() error { _, err := tx.GetService(ctx, "web"); return err },
			"FROM agents WHERE default_router": func() error {
				_, err := tx.DefaultRouter(ctx)
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			},
		} {
			before := preparedCount(ctx, t, tx, what)
			for range 3 {
				if err := read(); err != nil {
					return err
				}
			}
			after := preparedCount(ctx, t, tx, what)
			if after != before+1 && !(before > 0 && after == before) {
				t.Errorf("prepared statements with %q: %d before three reads, %d after; want one more (or the same one)", what, before, after)
			}
		}
		return nil
	})
}

// TestStaleStatementsAreRetried: when the server drops a connection's
// prepared statements (a pooler's DEALLOCATE ALL), the transaction that
// meets it runs again and succeeds.
func TestStaleStatementsAreRetried(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	ctx := context.Background()
	attempts := 0
	err := s.InTx(ctx, func(tx *store.Tx) error {
		attempts++
		if _, err := tx.GetService(ctx, "web"); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if attempts == 1 {
			if _, err := tx.Exec(ctx, `DEALLOCATE ALL`); err != nil {
				return err
			}
		}
		_, err := tx.GetService(ctx, "web")
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("after DEALLOCATE ALL: %v in %d attempts, want success in 2", err, attempts)
	}
}

// TestSQLiteStatementsArePreparedOnce: on SQLite a query is compiled once
// on the writer connection, and still runs after the schema changed
// (SQLite compiles it again by itself).
func TestSQLiteStatementsArePreparedOnce(t *testing.T) {
	s := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		return tx.InsertService(ctx, externalService("web", 20000))
	})
	for i := range 3 {
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if i == 2 {
				if _, err := tx.Exec(ctx, `CREATE INDEX services_test_port ON services (bridge_port)`); err != nil {
					return err
				}
			}
			svc, err := tx.GetService(ctx, "web")
			if err == nil && svc.BridgePort != 20000 {
				t.Errorf("read %+v, want bridge port 20000", svc)
			}
			return err
		})
	}
	n, err := store.WriterStatements(ctx, s, "FROM services WHERE name")
	if err != nil || n != 1 {
		t.Fatalf("statements reading a service after three reads: %d (%v), want 1", n, err)
	}
}
