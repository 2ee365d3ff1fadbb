package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Tx is a transaction. Every query of a step that writes more than one row
// goes through one.
type Tx struct {
	tx      *sqlx.Tx
	dialect string
	// xid is the PostgreSQL transaction's id when a statement that wrote
	// learned it (0: not learned), saving inTx a round trip.
	xid int64
	// last are writes that take a lock every transaction of their kind
	// waits for: inTx runs them after the rest, just before the commit,
	// so that the lock is held for as short a time as it can be.
	last []func(context.Context) error
	// numbering are the router entries written unnumbered, by agent, whose
	// routers' versions move with the last writes (bumpLast): one
	// statement for every router the transaction changed, however many
	// passes a batch ran in it.
	numbering map[string][]any
	// touched are the agents whose poll answers the transaction changes
	// (feed.go).
	touched touched
	// allocated is the bridge port AllocateBridgePort last claimed (0:
	// none), which InsertService may find committed meanwhile.
	allocated int
	// cache is the store's services cache in a read transaction, nil in
	// a write one (servicecache.go).
	cache *serviceCache
}

// InTx runs fn in a transaction, committing when it returns nil. When the
// transaction fails for a transient reason (PostgreSQL broke a deadlock or
// a serialization conflict, a row fn read was deleted before fn wrote it,
// a connection was dropped or refused, the
// server is starting, shutting down or full) and did not commit, fn runs
// again in a new one after a short backoff (see retryDelays): fn must only
// decide from what it reads in the transaction. When that does not help,
// the error wraps ErrUnavailable.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.retry(ctx, func() error { return s.inTx(ctx, fn) })
}

// Read runs fn in a read-only transaction on one consistent snapshot of
// the database, which never waits for writers: an SQLite reader
// connection, or PostgreSQL's REPEATABLE READ. Transient failures are
// retried as InTx's are.
func (s *Store) Read(ctx context.Context, fn func(*Tx) error) error {
	return s.retry(ctx, func() error {
		iso := sql.LevelRepeatableRead
		if s.dialect == SQLite {
			iso = sql.LevelDefault // a WAL read transaction is one snapshot
		}
		tx, err := s.reads.BeginTxx(ctx, &sql.TxOptions{ReadOnly: s.dialect == Postgres, Isolation: iso})
		if err != nil {
			return mapErr(err)
		}
		err = fn(&Tx{tx: tx, dialect: s.dialect, cache: s.services})
		// As in inTx: a connection lost mid-read can look like the end of
		// the rows, so a broken rollback makes the attempt transient.
		if rbErr := tx.Rollback(); connectionLost(rbErr) {
			return rbErr
		}
		return err
	})
}

func (s *Store) inTx(ctx context.Context, fn func(*Tx) error) error {
	if s.writers != nil {
		select {
		case s.writers <- struct{}{}:
			defer func() { <-s.writers }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	t := &Tx{tx: tx, dialect: s.dialect}
	err = fn(t)
	if err == nil {
		// Before the last writes: their locks are not held for it.
		err = t.notify(ctx)
	}
	for _, write := range t.last {
		if err != nil {
			break
		}
		err = write(ctx)
	}
	if err != nil {
		// lib/pq can report a connection closed mid-read as the end of the
		// rows, so fn may have decided on a row it did not see: when the
		// rollback finds the connection broken, the error is transient.
		if rbErr := tx.Rollback(); connectionLost(rbErr) {
			return rbErr
		}
		return err
	}
	// The transaction's id, when it wrote, lets commitOutcome learn whether
	// a commit whose connection broke happened (NULL: it wrote nothing, so
	// running it again is safe whatever happened).
	xid := sql.NullInt64{Int64: t.xid, Valid: t.xid != 0}
	if s.dialect == Postgres && !xid.Valid {
		if err := tx.QueryRowContext(ctx, `SELECT txid_current_if_assigned()`).Scan(&xid); err != nil {
			tx.Rollback()
			return mapErr(err)
		}
	}
	err = tx.Commit()
	if err != nil && xid.Valid && connectionLost(err) {
		err = s.commitOutcome(ctx, xid.Int64, err)
	} else {
		err = mapErr(err)
	}
	if err == nil {
		// This process sees its own changes at once, before any
		// notification comes back.
		s.feed.apply(t.touched)
	}
	return err
}

// commitOutcome asks PostgreSQL, on another connection, what became of
// transaction xid whose commit lost its connection: committed is success,
// aborted is the transient commitErr (InTx runs fn again), and when that
// cannot be learned the error wraps ErrUnavailable, which InTx does not
// retry: the change may or may not be stored.
func (s *Store) commitOutcome(ctx context.Context, xid int64, commitErr error) error {
	for _, delay := range retryDelays {
		var status sql.NullString
		err := s.db.QueryRowContext(ctx, `SELECT txid_status($1)`, xid).Scan(&status)
		switch {
		case err == nil && status.String == "committed":
			return nil
		case err == nil && status.String == "aborted":
			return commitErr
		case err != nil && !transient(err):
			return fmt.Errorf("%w: outcome of a commit unknown: %w", ErrUnavailable, commitErr)
		}
		// In progress (the server is still ending the broken session), or
		// the database is not reachable yet.
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: outcome of a commit unknown: %w", ErrUnavailable, commitErr)
		case <-time.After(delay):
		}
	}
	return fmt.Errorf("%w: outcome of a commit unknown: %w", ErrUnavailable, commitErr)
}
