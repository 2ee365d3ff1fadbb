package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/lib/pq"
)

// PostgreSQL connections prepare each statement once: without it, lib/pq
// sends every statement unnamed, so the server parses and plans it again
// each time, which took about a fifth of its CPU time in a fill of
// thousands of services. Each connection keeps its own statements, as the
// server does, so a pool never waits on another connection to prepare.

// preparedConnector opens lib/pq connections that prepare statements.
type preparedConnector struct{ *pq.Connector }

func (c preparedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(pqConn)
	if !ok {
		conn.Close()
		return nil, errors.New("store: lib/pq's connection lacks an interface svcbridge uses")
	}
	return &preparedConn{pqConn: pc, stmts: map[string]driver.Stmt{}}, nil
}

// pqConn is what database/sql uses of a lib/pq connection; preparedConn
// keeps all of it.
type pqConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// statementsPerConn bounds the statements one connection prepares:
// svcbridge has about a hundred; queries with IN lists of every length
// beyond the bound run unprepared.
const statementsPerConn = 512

// preparedConn runs each query with arguments as a statement it prepared
// on first use. Queries without arguments (migrations: several commands
// in one, which cannot be prepared) go as they are. database/sql uses a
// connection from one goroutine at a time, so the map needs no lock.
type preparedConn struct {
	pqConn
	stmts map[string]driver.Stmt
}

// stmt returns query's statement, prepared now if new; nil when the query
// runs unprepared.
func (c *preparedConn) stmt(ctx context.Context, query string, args []driver.NamedValue) (driver.Stmt, error) {
	if len(args) == 0 {
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

func (c *preparedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := c.stmt(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.pqConn.QueryContext(ctx, query, args)
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, c.forgetStale(query, err)
}

func (c *preparedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, err := c.stmt(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.pqConn.ExecContext(ctx, query, args)
	}
	res, err := st.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, c.forgetStale(query, err)
}

// errStaleStatement marks the failure of a statement the server no longer
// runs as prepared: transient, as a new transaction prepares it again.
var errStaleStatement = errors.New("prepared statement went stale")

// forgetStale drops a statement the server no longer runs as prepared: one
// a pooler discarded (invalid_sql_statement_name), or whose result columns
// a migration changed ("cached plan must not change result type",
// feature_not_supported). The failure aborted the transaction; the next
// use prepares the statement again.
func (c *preparedConn) forgetStale(query string, err error) error {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && (pqErr.Code == "26000" || pqErr.Code == "0A000") {
		delete(c.stmts, query)
		return fmt.Errorf("%w: %w", errStaleStatement, err)
	}
	return err
}
