package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
)

// Request smuggling (RFC 9112 §6.3, §11.2): a request carrying both
// Transfer-Encoding and Content-Length must be refused and its connection
// closed, as a proxy in front of svcbridge may frame it by the other
// header. net/http reads such a request as chunked and deletes its
// Content-Length before any handler runs, so the raw bytes are watched
// here instead: smugglingConn marks its connection when a header block
// holds both fields, and passes nothing after that block to the server;
// refuseSmuggling answers that connection's requests 400 and closes it.

// smugglingListener hands out smugglingConns.
type smugglingListener struct{ net.Listener }

func (l smugglingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &smugglingConn{Conn: c}, nil
}

// smugglingConn scans what the server reads without following the
// messages' framing: every run of lines between two empty lines counts as
// a header block. Each real header block lies within one such run (it
// holds no empty line), so none is missed; a body whose text itself holds
// both header lines and an empty line is refused too, which the API's
// JSON and YAML bodies never need.
type smugglingConn struct {
	net.Conn
	smuggled atomic.Bool // read by the handler, set by the reading goroutine
	line     []byte      // the start of the current line, enough to name its field
	te, cl   bool        // the current block has Transfer-Encoding, Content-Length
}

// fieldPrefixLen is how much of a line names the fields looked for.
const fieldPrefixLen = len("transfer-encoding:")

func (c *smugglingConn) Read(p []byte) (int, error) {
	if c.smuggled.Load() {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	for i, b := range p[:n] {
		if b != '\n' {
			if len(c.line) < fieldPrefixLen {
				c.line = append(c.line, b)
			}
			continue
		}
		line := bytes.TrimSuffix(c.line, []byte("\r"))
		c.line = c.line[:0]
		switch {
		case len(line) == 0:
			if c.te && c.cl {
				c.smuggled.Store(true)
				return i + 1, nil // the server sees this block and nothing after it
			}
			c.te, c.cl = false, false
		case hasFieldPrefix(line, "transfer-encoding:"):
			c.te = true
		case hasFieldPrefix(line, "content-length:"):
			c.cl = true
		}
	}
	return n, err
}

func hasFieldPrefix(line []byte, field string) bool {
	return len(line) >= len(field) && bytes.EqualFold(line[:len(field)], []byte(field))
}

// connKey is where the server's ConnContext leaves the connection.
type connKey struct{}

func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// refuseSmuggling answers 400 and closes the connection for a request
// whose connection smuggled one; other requests go to h.
func refuseSmuggling(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*smugglingConn); ok && c.smuggled.Load() {
			slog.Default().InfoContext(r.Context(), "request refused: Transfer-Encoding with Content-Length",
				"remote", r.RemoteAddr, "method", r.Method)
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"name":"ValidationError","message":"A request may not carry both Transfer-Encoding and Content-Length"}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}
