// Package store keeps svcbridge's state in SQL: PostgreSQL in production
// (lib/pq) and an embedded SQLite file for `svcbridge dev` (modernc.org/sqlite,
// the driver the embedded Temporal server already links). Both run the same
// queries and migrations; the few dialect differences live here.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Dialects.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Errors callers map to HTTP codes.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict wraps unique and foreign key violations; see Conflict.
	ErrConflict = errors.New("conflict")
)

// ForeignKey is the Constraint of every foreign key violation: a row still
// referenced, or a reference to a missing row.
const ForeignKey = "foreign_key"

// Conflict is a constraint violation: Constraint names what collided.
type Conflict struct {
	Constraint string
	Err        error
}

func (c *Conflict) Error() string { return "conflict on " + c.Constraint + ": " + c.Err.Error() }
func (c *Conflict) Unwrap() error { return ErrConflict }

// Store is svcbridge's database.
type Store struct {
	db      *sqlx.DB
	dialect string
}

// Open connects to url: a postgres:// or postgresql:// URL selects
// PostgreSQL; anything else is the path of an SQLite file. It applies
// pending migrations before returning.
func Open(ctx context.Context, url string) (*Store, error) {
	var s *Store
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(20)
		db.SetMaxIdleConns(20)
		s = &Store{db: db, dialect: Postgres}
	} else {
		// WAL lets readers run beside the writer; one connection queues
		// writers in Go instead of in SQLite's sleeping busy handler, and
		// _txlock=immediate takes the write lock at BEGIN so two transactions
		// never deadlock upgrading their locks.
		dsn := "file:" + url + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)" +
			"&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
		db, err := sqlx.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		s = &Store{db: db, dialect: SQLite}
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("connect to %s database: %w", s.dialect, err)
	}
	if err := s.Migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// Dialect is Postgres or SQLite.
func (s *Store) Dialect() string { return s.dialect }

// Close closes the connection pool.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Migrate applies pending migrations. It is idempotent, and on PostgreSQL
// a session lock lets many processes start at once.
func (s *Store) Migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	dialect := goose.DialectSQLite3
	opts := []goose.ProviderOption{goose.WithSlog(slog.New(slog.DiscardHandler))}
	if s.dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, s.db.DB, fsys, opts...)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	return nil
}

// Tx is a transaction. Every query of a step that writes more than one row
// goes through one.
type Tx struct {
	tx      *sqlx.Tx
	dialect string
}

// InTx runs fn in a transaction, committing when it returns nil. When
// PostgreSQL aborts the transaction to break a deadlock or a serialization
// conflict, fn runs again in a new one (a few times): fn must only decide
// from what it reads in the transaction.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTx(ctx, fn)
		if !retryable(err) || attempt == 5 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		}
	}
}

func (s *Store) inTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	if err := fn(&Tx{tx: tx, dialect: s.dialect}); err != nil {
		tx.Rollback()
		return err
	}
	return mapErr(tx.Commit())
}

// retryable reports a transaction PostgreSQL aborted so that a retry can
// succeed: deadlock_detected or serialization_failure.
func retryable(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "40P01" || pqErr.Code == "40001")
}

// forUpdate is the row-lock suffix. SQLite needs none: an immediate
// transaction already holds the database's only write lock.
func (t *Tx) forUpdate() string {
	if t.dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// binary makes col compare and sort byte by byte on both dialects, so
// lists and pages come out in the same order whatever collation the
// PostgreSQL database has (SQLite compares bytes already).
func (t *Tx) binary(col string) string {
	if t.dialect == Postgres {
		return col + ` COLLATE "C"`
	}
	return col
}

func (t *Tx) get(ctx context.Context, dest any, query string, args ...any) error {
	return mapErr(t.tx.GetContext(ctx, dest, t.tx.Rebind(query), args...))
}

func (t *Tx) sel(ctx context.Context, dest any, query string, args ...any) error {
	return mapErr(t.tx.SelectContext(ctx, dest, t.tx.Rebind(query), args...))
}

func (t *Tx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, t.tx.Rebind(query), args...)
	if err != nil {
		return 0, mapErr(err)
	}
	return res.RowsAffected()
}

// in expands a query with an IN (?) list.
func (t *Tx) in(query string, args ...any) (string, []any, error) {
	q, a, err := sqlx.In(query, args...)
	return q, a, err
}

// mapErr turns driver errors into ErrNotFound and *Conflict.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch pqErr.Code {
		case "23505":
			return &Conflict{Constraint: pqErr.Constraint, Err: err}
		case "23503":
			return &Conflict{Constraint: ForeignKey, Err: err}
		}
		return err
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return &Conflict{Constraint: sqliteConstraint(liteErr.Error()), Err: err}
		}
	}
	return err
}

// sqliteConstraint names the columns SQLite reports ("UNIQUE constraint
// failed: microservices.application, microservices.name") the way the
// migrations name PostgreSQL's constraints (microservices_application_name_key).
func sqliteConstraint(msg string) string {
	if strings.Contains(msg, "FOREIGN KEY") {
		return ForeignKey
	}
	// modernc prefixes the message with "constraint failed: ", so the
	// columns follow the last "failed: ".
	i := strings.LastIndex(msg, "failed: ")
	if i < 0 {
		return ""
	}
	cols := msg[i+len("failed: "):]
	if i := strings.Index(cols, " ("); i >= 0 {
		cols = cols[:i]
	}
	var table string
	var names []string
	for _, c := range strings.Split(cols, ", ") {
		t, col, _ := strings.Cut(c, ".")
		table = t
		names = append(names, col)
	}
	return table + "_" + strings.Join(names, "_") + "_key"
}

// IsConflict reports whether err violated the named constraint.
func IsConflict(err error, constraint string) bool {
	var c *Conflict
	return errors.As(err, &c) && c.Constraint == constraint
}

// now is the one clock of the store: UTC, so both dialects read back the
// same instant.
func now() time.Time { return time.Now().UTC() }
