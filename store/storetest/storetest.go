// Package storetest opens fresh, migrated stores for tests: an SQLite file
// in the test's temp dir, and a new PostgreSQL database dropped afterwards.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	_ "github.com/lib/pq"

	"svcbridge/pgtest"
	"svcbridge/store"
)

// Dialects lists the stores every store-level suite runs against.
var Dialects = []string{store.SQLite, store.Postgres}

// Open returns a fresh store of the dialect. PostgreSQL tests skip, saying
// how to get a server, when none answers (pgtest).
func Open(t testing.TB, dialect string) *store.Store {
	t.Helper()
	url := filepath.Join(t.TempDir(), "svcbridge.db")
	if dialect == store.Postgres {
		url = pgtest.NewDB(t)
	}
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s store: %v", dialect, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
