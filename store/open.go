package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
)

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
	s.services = newServiceCache()
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
