// Package store keeps svcbridge's state in SQL: PostgreSQL in production
// (lib/pq) and an embedded SQLite file for `svcbridge dev` (modernc.org/sqlite,
// the driver the embedded Temporal server already links). Both run the same
// queries and migrations; the few dialect differences live here.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	neturl "net/url"
	"strings"
	"sync/atomic"
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
	// ErrUnavailable wraps what stopped a transaction when the database
	// kept failing for longer than InTx retries (or a commit's outcome could
	// not be learned): the caller may try again later.
	ErrUnavailable = errors.New("database unavailable")
	// errVanished is a write that found none of the row its transaction
	// had read: a concurrent transaction deleted it in between, which
	// PostgreSQL's READ COMMITTED allows. Like a serialization failure it
	// is transient: InTx runs fn again, whose read then finds the row gone
	// and answers as it does for any missing row. It is ErrNotFound too,
	// for a caller that wrote without reading.
	errVanished = fmt.Errorf("%w: deleted by a concurrent transaction", ErrNotFound)
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
	// transactions counts the transactions begun, reads and writes.
	transactions atomic.Uint64
}

// readConns is how many of a PostgreSQL pool's connections writes leave to
// reads.
const readConns = 2

// Pool sizes one process's PostgreSQL connection pool (SQLite always uses
// one connection).
type Pool struct {
	MaxOpen, MaxIdle int
	MaxLifetime      time.Duration
}

// DefaultPool lets three api and two worker processes, or dev (two pools)
// and one api and two worker processes (50 connections), and a Temporal
// server (up to 40) share a default PostgreSQL
// (max_connections 100, 3 of them reserved for superusers); see the
// README's production section.
var DefaultPool = Pool{MaxOpen: 10, MaxIdle: 10, MaxLifetime: 30 * time.Minute}

// Open is OpenPool with DefaultPool.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenPool(ctx, url, DefaultPool)
}

// OpenPool connects to url: a postgres:// or postgresql:// URL selects
// PostgreSQL; anything else is the path of an SQLite file. It applies
// pending migrations before returning. Its errors never hold the URL's
// password.
func OpenPool(ctx context.Context, url string, pool Pool) (*Store, error) {
	s, err := open(ctx, url, pool)
	if err != nil {
		return nil, errors.New(RedactPassword(url, err.Error()))
	}
	return s, nil
}

func open(ctx context.Context, url string, pool Pool) (*Store, error) {
	var s *Store
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		connector, err := pq.NewConnector(oneRoundTrip(url))
		if err != nil {
			return nil, err
		}
		db := sqlx.NewDb(sql.OpenDB(preparedConnector{Connector: connector, stale: pqStale}), "postgres")
		db.SetMaxOpenConns(pool.MaxOpen)
		db.SetMaxIdleConns(pool.MaxIdle)
		db.SetConnMaxLifetime(pool.MaxLifetime)
		s = &Store{db: db, dialect: Postgres}
		if pool.MaxOpen > readConns {
			s.writers = make(chan struct{}, pool.MaxOpen-readConns)
		}
	} else {
		// WAL lets readers run beside the writer; one connection queues
		// writers in Go instead of in SQLite's sleeping busy handler, and
		// _txlock=immediate takes the write lock at BEGIN so two transactions
		// never deadlock upgrading their locks.
		dsn := "file:" + url + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)" +
			"&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
		db, err := openSQLite(dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		// Readers see the last committed state (WAL) and may not write.
		// Idle ones stay open, with the statements they prepared.
		reads, err := openSQLite("file:" + url + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
		if err != nil {
			db.Close()
			return nil, err
		}
		reads.SetMaxOpenConns(4)
		reads.SetMaxIdleConns(4)
		s = &Store{db: db, dialect: SQLite, reads: reads}
	}
	if s.reads == nil {
		s.reads = s.db
	}
	s.feed = &feed{cache: newPollCache()}
	s.stopFeed = func() {}
	if s.dialect == Postgres {
		s.feed.listen, s.stopFeed = startListener(s, url)
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

// openSQLite opens a pool of SQLite connections that prepare statements.
func openSQLite(dsn string) (*sqlx.DB, error) {
	connector, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(preparedConnector{Connector: connector, finalize: true}), "sqlite"), nil
}

// oneRoundTrip turns on lib/pq's binary_parameters unless the URL sets it:
// a statement with arguments then costs one round trip (parse, bind and
// execute sent at once) instead of two (prepare, then execute). Only []byte
// arguments change encoding, and svcbridge sends none.
func oneRoundTrip(dsn string) string {
	u, err := neturl.Parse(dsn)
	if err != nil {
		return dsn // lib/pq reports it
	}
	q := u.Query()
	if q.Has("binary_parameters") {
		return dsn
	}
	q.Set("binary_parameters", "yes")
	u.RawQuery = q.Encode()
	return u.String()
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
	// xid is the PostgreSQL transaction's id when a statement that wrote
	// learned it (0: not learned), saving inTx a round trip.
	xid int64
	// last are writes that take a lock every transaction of their kind
	// waits for: inTx runs them after the rest, just before the commit,
	// so that the lock is held for as short a time as it can be.
	last []func() error
	// touched are the agents whose poll answers the transaction changes
	// (feed.go).
	touched touched
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
		s.transactions.Add(1)
		tx, err := s.reads.BeginTxx(ctx, &sql.TxOptions{ReadOnly: s.dialect == Postgres, Isolation: iso})
		if err != nil {
			return mapErr(err)
		}
		err = fn(&Tx{tx: tx, dialect: s.dialect})
		// As in inTx: a connection lost mid-read can look like the end of
		// the rows, so a broken rollback makes the attempt transient.
		if rbErr := tx.Rollback(); connectionLost(rbErr) {
			return rbErr
		}
		return err
	})
}

// retry runs attempt again after a transient failure, with retryDelays'
// backoff; when that does not help, the error wraps ErrUnavailable.
func (s *Store) retry(ctx context.Context, attempt func() error) error {
	var err error
	for _, delay := range retryDelays {
		if err = attempt(); !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		// Half fixed, half random, so processes that lost the database
		// together do not come back in step.
		case <-time.After(delay/2 + rand.N(delay/2)):
		}
	}
	// A row still vanishing was never there for this caller: not found.
	if err = attempt(); transient(err) && !errors.Is(err, errVanished) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// retryDelays are the waits between InTx's attempts: about 1.3 s in all,
// enough for a dropped connection or a failover's first seconds, short
// enough that a request answers 503 well before clients give up.
var retryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond}

func (s *Store) inTx(ctx context.Context, fn func(*Tx) error) error {
	if s.writers != nil {
		select {
		case s.writers <- struct{}{}:
			defer func() { <-s.writers }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.transactions.Add(1)
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
		err = write()
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

// Transactions is how many transactions the store began (reads and
// writes, attempts that were retried too): what a request cost the
// database, for tests and benchmarks.
func (s *Store) Transactions() uint64 { return s.transactions.Load() }

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

// transient reports an error after which a new transaction can succeed:
// a row that vanished (errVanished), PostgreSQL's serialization_failure, deadlock_detected,
// too_many_connections, admin_shutdown, crash_shutdown,
// cannot_connect_now, a connection exception or any FATAL error, a
// connection that broke or was refused, or a prepared statement gone
// stale. An error that already wraps ErrUnavailable is final.
func transient(err error) bool {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return false
	}
	if errors.Is(err, errStaleStatement) || errors.Is(err, errVanished) {
		return true
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch pqErr.Code {
		case "40001", "40P01", "53300", "57P01", "57P02", "57P03":
			return true
		}
		// A FATAL error ends the session: at connection time it is a server
		// refusing sessions (a database closed to connections, say).
		return pqErr.Code.Class() == "08" || pqErr.Fatal()
	}
	return connectionLost(err)
}

// connectionLost reports a connection that broke or could not be opened,
// so whatever was in flight may or may not have run. lib/pq reports a
// server's FATAL error (a terminated backend) as driver.ErrBadConn.
func connectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, sql.ErrConnDone) || errors.As(err, &opErr)
}

// forUpdate is the suffix that locks the rows of the table named table
// (its name or alias in the query). SQLite needs none: an immediate
// transaction already holds the database's only write lock.
func (t *Tx) forUpdate(table string) string {
	if t.dialect == Postgres {
		return " FOR UPDATE OF " + table
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

// namedAfter is the condition and order of a page by the name column col
// (byte order): names after after, up to limit of them (0: all).
func (t *Tx) namedAfter(col, after string, limit int) (string, []any) {
	page := t.binary(col) + ` > ? ORDER BY ` + t.binary(col)
	if limit <= 0 {
		return page, []any{after}
	}
	return page + ` LIMIT ?`, []any{after, limit}
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

// updateRead runs an UPDATE of one row that the caller read in this
// transaction; when it changed none, the row was deleted since the read
// (errVanished). On SQLite nothing can delete it meanwhile (the
// transaction holds the only write lock from its start): ErrNotFound.
func (t *Tx) updateRead(ctx context.Context, query string, args ...any) error {
	n, err := t.exec(ctx, query, args...)
	switch {
	case err != nil:
		return err
	case n > 0:
		return nil
	case t.dialect == Postgres:
		return errVanished
	}
	return ErrNotFound
}

// write runs a statement that writes rows; on PostgreSQL the same round
// trip learns the transaction's id (xid), so inTx needs no query for it
// before the commit.
func (t *Tx) write(ctx context.Context, query string, args ...any) error {
	if t.dialect != Postgres {
		_, err := t.exec(ctx, query, args...)
		return err
	}
	var xids []int64
	if err := t.sel(ctx, &xids, query+` RETURNING txid_current()`, args...); err != nil {
		return err
	}
	if len(xids) > 0 {
		t.xid = xids[0]
	}
	return nil
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

// RedactPassword returns text with every password that url carries (in
// its user info or a password parameter, raw or decoded) replaced by
// "xxxxx", so errors about a database URL can be printed. It does not need
// url to parse: a malformed URL is when errors repeat it.
func RedactPassword(url, text string) string {
	var secrets []string
	rest := url
	if _, after, ok := strings.Cut(rest, "://"); ok {
		rest = after
	}
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.Index(rest, "?"); i >= 0 {
		query = rest[i+1:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(authority[:at], ":"); ok {
			secrets = append(secrets, pw)
		}
	}
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, "password") {
			secrets = append(secrets, strings.SplitN(v, "#", 2)[0])
		}
	}
	for _, pw := range secrets {
		for _, form := range []string{pw, unescape(pw)} {
			if form != "" {
				text = strings.ReplaceAll(text, form, "xxxxx")
			}
		}
	}
	return text
}

func unescape(s string) string {
	u, err := neturl.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}
