package store

import "context"

// Exec and Get run raw SQL in a transaction, for tests that look at the
// server's side of it.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.exec(ctx, query, args...)
}

func (t *Tx) Get(ctx context.Context, dest any, query string, args ...any) error {
	return t.get(ctx, dest, query, args...)
}
