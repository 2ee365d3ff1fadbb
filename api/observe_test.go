package api

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"svcbridge/buildinfo"
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

// Every answer says which server gave it: /healthz, a 404 and /metrics
// carry the version /api/v3/status reports.
func TestEveryAnswerCarriesTheVersion(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	want := buildinfo.Version()
	health := api.Do("GET", "/healthz", nil).Want(200)
	if !strings.Contains(string(health.Body), `"version":"`+want+`"`) || health.Header.Get(VersionHeader) != want {
		t.Errorf("/healthz: %s, header %q", health.Body, health.Header.Get(VersionHeader))
	}
	if got := api.Do("GET", "/api/v3/nothing", nil).Want(404).Header.Get(VersionHeader); got != want {
		t.Errorf("a 404's %s: %q", VersionHeader, got)
	}
	if m := api.Do("GET", "/metrics", nil).Want(200); !strings.Contains(string(m.Body), `svcbridge_build_info{goversion="`+runtime.Version()+`",version="`+want+`"} 1`) {
		t.Errorf("/metrics lacks svcbridge_build_info")
	}
}
