package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/config"
	"svcbridge/store"
)

// TestHTTPServerBoundsClients runs the API on the server every listener
// uses: a client that stops sending its body is cut at HTTP_READ_TIMEOUT
// with a 408 that is not logged as an error, and headers over
// HTTP_MAX_HEADER_BYTES are refused.
func TestHTTPServerBoundsClients(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	ln, cfg := serveTestAPI(t, []string{"--http-read-timeout", "1s"}, api.Options{Logger: slog.Default()})

	send := func(request string) *http.Response {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(time.Minute)) // only so a broken server cannot hang the test
		if _, err := conn.Write([]byte(request)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	stalled := send("POST /api/v3/services HTTP/1.1\r\nHost: svcbridge\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")
	if stalled.StatusCode != http.StatusRequestTimeout {
		t.Errorf("body never finished: %d, want 408", stalled.StatusCode)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a client's stalled body was logged as an error:\n%s", logs.String())
	}

	big := send(fmt.Sprintf("GET /healthz HTTP/1.1\r\nHost: svcbridge\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", cfg.HTTP.MaxHeaderBytes+8192)))
	if big.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers over HTTP_MAX_HEADER_BYTES: %d, want 431", big.StatusCode)
	}
}

// A watch outlives HTTP_WRITE_TIMEOUT: it lifts the deadline for its own
// request, every other request keeps it.
func TestWatchOutlivesTheWriteTimeout(t *testing.T) {
	ln, _ := serveTestAPI(t, []string{"--http-write-timeout", "300ms"},
		api.Options{Logger: slog.New(slog.DiscardHandler), Reconciler: noReconciles{}, WatchInterval: 50 * time.Millisecond})
	base := "http://" + ln.Addr().String()
	req, _ := http.NewRequest("GET", base+"/api/v3/agents?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(600 * time.Millisecond) // twice the write timeout
	create, _ := http.NewRequest("POST", base+"/api/v3/agents", strings.NewReader(`{"name":"late"}`))
	create.Header.Set("Authorization", "Bearer "+token)
	create.Header.Set("Content-Type", "application/json")
	if r, err := http.DefaultClient.Do(create); err != nil || r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", r, err)
	}
	body := bufio.NewReader(resp.Body)
	if line, err := body.ReadString('\n'); err != nil || !strings.Contains(line, `"type":"BOOKMARK"`) {
		t.Fatalf("the watch's first line: %q %v", line, err)
	}
	line, err := body.ReadString('\n')
	if err != nil || !strings.Contains(line, `"type":"ADDED"`) || !strings.Contains(line, `"name":"late"`) {
		t.Fatalf("the watch after the write timeout: %q %v", line, err)
	}
}

// token is the admin's token of serveTestAPI.
const token = "roles-test-admin-token-000000001"

// serveTestAPI serves the API with o, a SQLite store and token, on the
// server every listener uses, configured by args; it is closed when the
// test ends.
func serveTestAPI(t *testing.T, args []string, o api.Options) (net.Listener, config.Config) {
	t.Helper()
	cfg := devConfig(t, args...)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "svcbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if o.Auth, err = auth.NewStatic(auth.StaticToken{Name: "admin", Role: string(auth.Admin), Token: token}); err != nil {
		t.Fatal(err)
	}
	o.Store = st
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpServer(cfg.HTTP, api.New(o))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln, cfg
}

// devConfig is the configuration `svcbridge dev ARGS...` runs with.
func devConfig(t *testing.T, args ...string) config.Config {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.RoleFlags(fs, "dev")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// noReconciles starts nothing: these tests have no Temporal.
type noReconciles struct{}

func (noReconciles) ServiceCreated(context.Context, string) error  { return nil }
func (noReconciles) ServiceChanged(context.Context, string) error  { return nil }
func (noReconciles) AgentsQueued(context.Context, ...string) error { return nil }
