package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/lib/pq"
)

// Connections prepare each statement once: without it, lib/pq sends every
// statement unnamed, so PostgreSQL parses and plans it again each time
// (about a fifth of its CPU time in a fill of thousands of services), and
// modernc's SQLite compiles every statement again, on the one writer
// connection every write transaction waits for. Each connection keeps its
// own statements, as the servers do, so a pool never waits on another
// connection to prepare.

// preparedConnector opens connections that prepare statements.
type preparedConnector struct {
	driver.Connector
	// stale reports a failure meaning the server no longer runs the
	// statement as prepared (nil: never).
	stale func(error) bool
	// finalize closes a connection's statements before it: SQLite frees a
	// connection only once its statements are finalized, while PostgreSQL
	// drops them with the session.
	finalize bool
}

func (c preparedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc, ok := conn.(driverConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("store: the %T connection lacks an interface svcbridge uses", conn)
	}
	return &preparedConn{driverConn: dc, connector: c, stmts: map[string]driver.Stmt{}}, nil
}

// driverConn is what database/sql uses of a lib/pq or modernc connection;
// preparedConn keeps all of it.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// statementsPerConn bounds the statements one connection prepares:
// svcbridge has about a hundred; queries with IN lists of every length
// beyond the bound run unprepared.
const statementsPerConn = 512

// preparedConn runs each query that preparable allows as a statement it
// prepared on first use, and the rest as they are. database/sql uses a
// connection from one goroutine at a time, so the map needs no lock.
type preparedConn struct {
	driverConn
	connector preparedConnector
	stmts     map[string]driver.Stmt
}

// CheckNamedValue keeps the driver's own argument conversion (lib/pq's);
// ErrSkip leaves it to database/sql, as for a driver without one.
func (c *preparedConn) CheckNamedValue(nv *driver.NamedValue) error {
	if checker, ok := c.driverConn.(driver.NamedValueChecker); ok {
		return checker.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// preparable decides whether a query with args arguments is prepared: one
// with arguments always; one without only when it is a single SELECT, as
// the default router's read that every create and pass make and the
// bridge-port floor's that every create makes (three statements a service
// that PostgreSQL parsed and planned, and SQLite compiled, every time).
// The rest without arguments are migrations' and session commands, run
// once, some of several commands in one, which lib/pq cannot prepare.
func preparable(query string, args int) bool {
	if args > 0 {
		return true
	}
	q := strings.TrimSpace(query)
	return len(q) > len("SELECT") && strings.EqualFold(q[:len("SELECT")], "SELECT") && !strings.Contains(q, ";")
}

// stmt returns query's statement, prepared now if new; nil when the query
// runs unprepared.
func (c *preparedConn) stmt(ctx context.Context, query string, args []driver.NamedValue) (driver.Stmt, error) {
	if !preparable(query, len(args)) {
		return nil, nil
	}
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	if len(c.stmts) >= statementsPerConn {
		return nil, nil
	}
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// statementsSent and transactionsBegun count what this process's
// connections sent: what a change costs the database in round trips (a
// transaction adds its BEGIN and COMMIT to its statements on PostgreSQL).
var statementsSent, transactionsBegun atomic.Int64

// Sent is how many statements and transactions this process's store
// connections have sent since it started.
func Sent() (statements, transactions int64) {
	return statementsSent.Load(), transactionsBegun.Load()
}

func (c *preparedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	transactionsBegun.Add(1)
	return c.driverConn.BeginTx(ctx, opts)
}

func (c *preparedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	statementsSent.Add(1)
	st, err := c.stmt(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.driverConn.QueryContext(ctx, query, args)
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, c.forgetStale(query, err)
}

func (c *preparedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	statementsSent.Add(1)
	st, err := c.stmt(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.driverConn.ExecContext(ctx, query, args)
	}
	res, err := st.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, c.forgetStale(query, err)
}

func (c *preparedConn) Close() error {
	if c.connector.finalize {
		for _, st := range c.stmts {
			st.Close()
		}
	}
	return c.driverConn.Close()
}

// errStaleStatement marks the failure of a statement the server no longer
// runs as prepared: transient, as a new transaction prepares it again.
var errStaleStatement = errors.New("prepared statement went stale")

// forgetStale drops a statement the server no longer runs as prepared; the
// failure aborted the transaction, and the next use prepares it again.
func (c *preparedConn) forgetStale(query string, err error) error {
	if err != nil && c.connector.stale != nil && c.connector.stale(err) {
		delete(c.stmts, query)
		return fmt.Errorf("%w: %w", errStaleStatement, err)
	}
	return err
}

// pqStale reports a PostgreSQL statement that a pooler discarded
// (invalid_sql_statement_name), or whose result columns a migration
// changed ("cached plan must not change result type",
// feature_not_supported). SQLite prepares a statement again by itself
// when the schema changes.
func pqStale(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "26000" || pqErr.Code == "0A000")
}
