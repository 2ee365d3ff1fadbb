package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/lib/pq"
)

func TestTransient(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"serialization":       {&pq.Error{Code: "40001"}, true},
		"deadlock":            {fmt.Errorf("wrapped: %w", &pq.Error{Code: "40P01"}), true},
		"too many clients":    {&pq.Error{Code: "53300"}, true},
		"admin shutdown":      {&pq.Error{Code: "57P01"}, true},
		"cannot connect now":  {&pq.Error{Code: "57P03"}, true},
		"connection failure":  {&pq.Error{Code: "08006"}, true},
		"closed database":     {&pq.Error{Code: "55000", Severity: "FATAL"}, true},
		"bad connection":      {driver.ErrBadConn, true},
		"stale statement":     {fmt.Errorf("%w: %w", errStaleStatement, &pq.Error{Code: "26000"}), true},
		"unexpected EOF":      {io.ErrUnexpectedEOF, true},
		"connection done":     {sql.ErrConnDone, true},
		"refused":             {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		"unique violation":    {&pq.Error{Code: "23505"}, false},
		"invalid text":        {&pq.Error{Code: "22021"}, false},
		"not found":           {ErrNotFound, false},
		"canceled":            {context.Canceled, false},
		"already unavailable": {fmt.Errorf("%w: %w", ErrUnavailable, driver.ErrBadConn), false},
		"nil":                 {nil, false},
	}
	for name, c := range cases {
		if got := transient(c.err); got != c.want {
			t.Errorf("%s: transient(%v) = %v, want %v", name, c.err, got, c.want)
		}
	}
}
