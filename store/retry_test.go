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

func TestRedactPassword(t *testing.T) {
	cases := []struct{ url, text, want string }{
		{"postgres://u:S3cret@h/db", `parse "postgres://u:S3cret@h/db": bad`, `parse "postgres://u:xxxxx@h/db": bad`},
		{"postgres://u:S3cret@h:x/db", `parse "postgres://u:S3cret@h:x/db": invalid port ":x" after host`, `parse "postgres://u:xxxxx@h:x/db": invalid port ":x" after host`},
		{"postgres://u:p%40ss@h/db", "p%40ss and p@ss", "xxxxx and xxxxx"},
		{"postgres://u:a:b@c@h/db", "a:b@c", "xxxxx"},
		{"postgres://u@h/db?sslmode=disable&password=S3cret", "password=S3cret", "password=xxxxx"},
		{"postgres://u@h/db", "nothing to hide: u@h", "nothing to hide: u@h"},
		{"postgres://u:@h/db", "u:@h", "u:@h"},
		{"/tmp/svcbridge.db", "/tmp/svcbridge.db", "/tmp/svcbridge.db"},
	}
	for _, c := range cases {
		if got := RedactPassword(c.url, c.text); got != c.want {
			t.Errorf("RedactPassword(%q, %q) = %q, want %q", c.url, c.text, got, c.want)
		}
	}
}

func TestOneRoundTrip(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://svcbridge:p%40ss@db:5432/svcbridge?sslmode=require": "postgres://svcbridge:p%40ss@db:5432/svcbridge?binary_parameters=yes&sslmode=require",
		"postgresql://db/svcbridge":                                     "postgresql://db/svcbridge?binary_parameters=yes",
		// The operator's own setting stays, whatever it is.
		"postgres://db/svcbridge?binary_parameters=no": "postgres://db/svcbridge?binary_parameters=no",
	} {
		if got := oneRoundTrip(in); got != want {
			t.Errorf("oneRoundTrip(%q) = %q, want %q", in, got, want)
		}
	}
}
