package store

import (
	"context"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

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

// inChunk bounds the ids of one statement's IN list: PostgreSQL takes at
// most 65,535 parameters and SQLite 32,766, and a fleet has more agents.
const inChunk = 500

// selIn runs query, each of whose IN (?) lists takes ids, over ids
// inChunk at a time, and returns the rows of all (each chunk's in the
// query's order).
func selIn[T any](ctx context.Context, t *Tx, query string, ids []string) ([]T, error) {
	var out []T
	lists := make([]any, strings.Count(query, "IN (?)"))
	for chunk := range slices.Chunk(ids, inChunk) {
		for i := range lists {
			lists[i] = chunk
		}
		q, args, err := t.in(query, lists...)
		if err != nil {
			return nil, err
		}
		var part []T
		if err := t.sel(ctx, &part, q, args...); err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}
