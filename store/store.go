// Package store keeps svcbridge's state in SQL: PostgreSQL in production
// (lib/pq) and an embedded SQLite file for `svcbridge dev` (modernc.org/sqlite,
// the driver the embedded Temporal server already links). Both run the same
// queries and migrations; the few dialect differences live in open.go (the
// connections) and dialect.go (the SQL). A query runs in a transaction
// (tx.go), retried after a transient failure (retry.go), its driver errors
// mapped to the store's (errors.go).
package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Dialects.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Store is svcbridge's database.
type Store struct {
	db      *sqlx.DB
	dialect string
	// reads serves Read: on SQLite a pool of read-only connections beside
	// the one writer, so reads never queue behind writes; db on PostgreSQL.
	reads *sqlx.DB
	// writers bounds the write transactions open at once on PostgreSQL
	// below the pool's size, so a burst of writes never takes the
	// connections Read needs (nil: no bound).
	writers chan struct{}
	// feed keeps the agents' poll answers current (feed.go); stopFeed
	// ends its listener.
	feed     *feed
	stopFeed func()
	// services keeps the services lists read (servicecache.go).
	services *serviceCache
	// batches are the write transactions InBatch runs together.
	batches batches
}

// Dialect is Postgres or SQLite.
func (s *Store) Dialect() string { return s.dialect }

// Close stops the change feed's listener and closes the connection pools.
func (s *Store) Close() error {
	s.stopFeed()
	if s.reads != s.db {
		s.reads.Close()
	}
	return s.db.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// now is the one clock of the store: UTC, so both dialects read back the
// same instant.
func now() time.Time { return time.Now().UTC() }
