package api

import (
	"bytes"
	"fmt"
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
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
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

// TestClientsCannotGrowMetrics: every label a client influences comes
// from a closed set: requests with invented methods, without a token, on
// paths no route has, add no series to /metrics (a client once grew it
// from 172 KB to 45 MB with 30 KB methods).
func TestClientsCannotGrowMetrics(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	api.Do("GET", "/api/v3/nope", nil).Want(404) // the unmatched series exist
	before := api.Do("GET", "/metrics", nil).Want(200).Body
	for i := range 20 {
		method := fmt.Sprintf("X%s%d", strings.Repeat("A", 1000), i)
		api.Do(method, fmt.Sprintf("/api/v3/services/%d", i), nil)
		api.Do(method, fmt.Sprintf("/nope/%d", i), nil)
	}
	after := api.Do("GET", "/metrics", nil).Want(200).Body
	if strings.Contains(string(after), "AAAA") {
		t.Errorf("/metrics holds a client's method")
	}
	series := func(b []byte) int {
		n := 0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "svcbridge_http_") {
				n++
			}
		}
		return n
	}
	// The 20 requests of each kind fall into the "other" method's series:
	// a fixed number, whatever their count.
	if grown := series(after) - series(before); grown > 40 {
		t.Errorf("/metrics grew by %d HTTP series for 40 requests with invented methods", grown)
	}
}

func TestRequestLevel(t *testing.T) {
	for _, tc := range []struct {
		method, route string
		code          int
		want          slog.Level
	}{
		{"GET", "/api/v3/services", 200, slog.LevelDebug},
		{"GET", "/api/v3/agent/router", 304, slog.LevelDebug},
		{"PATCH", "/api/v3/agent/config/changes", 204, slog.LevelDebug},
		{"PUT", "/api/v3/agent/router/status", 204, slog.LevelDebug},
		{"GET", "/healthz", 200, slog.LevelDebug},
		{"GET", "/readyz", 503, slog.LevelDebug},
		{"POST", "/api/v3/services", 201, slog.LevelInfo},
		{"PATCH", "/api/v3/agents/:agent", 200, slog.LevelInfo},
		{"DELETE", "/api/v3/services/:name", 204, slog.LevelInfo},
		{"GET", "/api/v3/services/:name", 404, slog.LevelInfo},
		{"PUT", "/api/v3/agent/router/status", 400, slog.LevelInfo},
		{"GET", "/api/v3/services", 500, slog.LevelError},
		{"POST", "/api/v3/services", 503, slog.LevelError},
	} {
		if got := requestLevel(tc.method, tc.route, tc.code); got != tc.want {
			t.Errorf("%s %s %d: %s, want %s", tc.method, tc.route, tc.code, got, tc.want)
		}
	}
}
