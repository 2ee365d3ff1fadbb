package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/lib/pq"
)

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

// transient reports an error after which a new transaction can succeed:
// a row that vanished (errVanished), a bridge port allocated as another
// create committed it (errPortRaced), PostgreSQL's serialization_failure, deadlock_detected,
// too_many_connections, admin_shutdown, crash_shutdown,
// cannot_connect_now, a connection exception or any FATAL error, a
// connection that broke or was refused, or a prepared statement gone
// stale. An error that already wraps ErrUnavailable is final.
func transient(err error) bool {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return false
	}
	if errors.Is(err, errStaleStatement) || errors.Is(err, errVanished) || errors.Is(err, errPortRaced) {
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
