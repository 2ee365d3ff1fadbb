package store

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
