package store

import (
	"context"
	"strings"
)

// Exec and Get run raw SQL in a transaction, for tests that look at the
// server's side of it.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.exec(ctx, query, args...)
}

func (t *Tx) Get(ctx context.Context, dest any, query string, args ...any) error {
	return t.get(ctx, dest, query, args...)
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
