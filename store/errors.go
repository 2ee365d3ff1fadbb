package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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
	// errPortRaced is an insert of the port AllocateBridgePort claimed
	// that a create committed between its search and its claim: transient,
	// as the next attempt's search reads it taken.
	errPortRaced = errors.New("allocated bridge port committed by a concurrent create")
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
