package store_test

import (
	"context"
	"strings"
	"testing"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

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
