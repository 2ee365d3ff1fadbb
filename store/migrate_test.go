package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestMigrationsIdempotent opens the same database twice: the second Open
// re-runs Migrate, which must be a no-op that keeps the data.
func TestMigrationsIdempotent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		u := url(t, dialect)
		s1, err := store.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		mustTx(t, s1, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "hash-1")
		})
		if err := s1.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate on an open store: %v", err)
		}
		s1.Close()

		s2, err := store.Open(ctx, u)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer s2.Close()
		mustTx(t, s2, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.GetAgent(ctx, "hub")
			if err != nil {
				return err
			}
			if a.UUID != "a-1" || !a.DefaultRouter {
				return fmt.Errorf("agent after reopen = %+v", a)
			}
			return nil
		})
	})
}

// TestPagesByNameReadAnIndexInOrder: on PostgreSQL, whose databases sort
// text by a locale, a page of services, their tags or the drift check's
// routers, all in byte order, is read from an index in that order, so it
// costs its own size however many rows the table holds; without one,
// every page read and sorted the whole table. Scans without order and
// sorts are disabled, so that the plan shows what the indexes allow,
// whatever the table's size.
func TestPagesByNameReadAnIndexInOrder(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		for _, off := range []string{"seqscan", "bitmapscan", "sort"} {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_`+off+` = off`); err != nil {
				return err
			}
		}
		for name, q := range tx.PagesByName() {
			var plan []string
			if err := tx.Select(ctx, &plan, "EXPLAIN "+q[0].(string), q[1:]...); err != nil {
				return err
			}
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, "Index") || strings.Contains(text, "Sort") || strings.Contains(text, "Seq Scan") {
				t.Errorf("%s reads its page without an index in byte order:\n%s", name, text)
			}
		}
		return nil
	})
}
