package api

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"svcbridge/store"
)

// lockedBuffer is a log sink the server's goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUnknownRoutesAreLogged: a request no route matches is logged with
// what it asked for (a client calling an API svcbridge lacks shows up in
// the log), while the metric label stays "unmatched".
func TestUnknownRoutesAreLogged(t *testing.T) {
	var logs lockedBuffer
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	api.Do("POST", "/api/v3/flows/7?x=1", nil).Want(404)
	api.Do("GET", "/api/v3/services", nil).Want(200)
	var unknown, known string
	for _, line := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(line, "route=unmatched"):
			unknown = line
		case strings.Contains(line, "route=/api/v3/services"):
			known = line
		}
	}
	if !strings.Contains(unknown, "method=POST") || !strings.Contains(unknown, "path=/api/v3/flows/7") {
		t.Fatalf("unknown route logged as %q", unknown)
	}
	if known == "" || strings.Contains(known, "path=") {
		t.Fatalf("known route logged as %q", known)
	}
}
