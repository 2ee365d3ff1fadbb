package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Exec and Get run raw SQL in a transaction, for tests that look at the
// server's side of it.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.exec(ctx, query, args...)
}

func (t *Tx) Get(ctx context.Context, dest any, query string, args ...any) error {
	return t.get(ctx, dest, query, args...)
}

func (t *Tx) Select(ctx context.Context, dest any, query string, args ...any) error {
	return t.sel(ctx, dest, query, args...)
}

// PagesByName are the queries that read a page of rows by name in byte
// order, each with the arguments of one page.
func (t *Tx) PagesByName() map[string][]any {
	services, args := t.servicesPage("", 500)
	return map[string][]any{
		"ServicesAfter":     append([]any{services}, args...),
		"readTags":          {t.tagsOfRange(), "a", "m"},
		"RouterAgentsAfter": {t.routerAgentsPage(), "", 500},
	}
}

// WriterStatements counts the statements an SQLite store's one writer
// connection holds prepared whose text contains part.
func WriterStatements(ctx context.Context, s *Store, part string) (int, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	n := 0
	err = conn.Raw(func(dc any) error {
		for query := range dc.(*preparedConn).stmts {
			if strings.Contains(query, part) {
				n++
			}
		}
		return nil
	})
	return n, err
}

// LearnedXID is the transaction's id as a write learned it (0: none did).
func (t *Tx) LearnedXID() int64 { return t.xid }

// Starved runs fn while it holds every connection of s's pools, so that
// whatever fn asks of the database waits until fn's context ends, wait
// from now: fn succeeds only when it is answered from memory.
func Starved(s *Store, wait time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pools := []*sqlx.DB{s.db}
	if s.reads != s.db {
		pools = append(pools, s.reads)
	}
	for _, pool := range pools {
		n := pool.Stats().MaxOpenConnections
		if n == 0 {
			return errors.New("a pool without a bound cannot be starved")
		}
		for range n {
			conn, err := pool.Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
		}
	}
	ctx, cancel = context.WithTimeout(ctx, wait)
	defer cancel()
	return fn(ctx)
}

// Batches is how many batches of InBatch run, and how many callers wait
// for one.
func Batches(s *Store) (running, waiting int) {
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	return s.batches.running, len(s.batches.waiting)
}
