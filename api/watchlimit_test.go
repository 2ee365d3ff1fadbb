package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"svcbridge/auth"
	"svcbridge/store"
)

func TestCanWatch(t *testing.T) {
	l := Limits{WatchMax: 3, WatchMaxPerClient: 2}
	for _, c := range []struct {
		open, client int
		want         bool
	}{{0, 0, true}, {2, 1, true}, {2, 2, false}, {3, 0, false}} {
		if got := canWatch(l, c.open, c.client); got != c.want {
			t.Errorf("canWatch(%d open, %d of the client) = %v", c.open, c.client, got)
		}
	}
}

// openWatch opens a watch of path with token; the answer's body stays
// open until the test ends.
func openWatch(t *testing.T, api *testAPI, path, token string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", api.URL()+path+"?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := api.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Watches racing for the last places: each user gets at most
// WatchMaxPerClient, the process at most WatchMax, the others 429 with
// Retry-After; a closed watch frees its place.
func TestWatchesAreLimited(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
		o.Limits = DefaultLimits
		o.Limits.WatchMax, o.Limits.WatchMaxPerClient = 3, 2
	})
	race := func(token string, n int) []*http.Response {
		out := make([]*http.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { out[i] = openWatch(t, api, "/api/v3/agents", token) })
		}
		wg.Wait()
		return out
	}
	codes := func(rs []*http.Response) map[int]int {
		m := map[int]int{}
		for _, r := range rs {
			m[r.StatusCode]++
			if r.StatusCode == 429 && r.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		}
		return m
	}
	admin := race(testTokens[auth.Admin], 4)
	if got := codes(admin); got[200] != 2 || got[429] != 2 {
		t.Fatalf("one user's racing watches: %v, want 2 × 200 (per client) and 2 × 429", got)
	}
	if got := codes(race(testTokens[auth.Viewer], 3)); got[200] != 1 || got[429] != 2 {
		t.Fatalf("another user's: %v, want 1 × 200 (per process) and 2 × 429", got)
	}
	for _, r := range admin {
		if r.StatusCode == 200 {
			r.Body.Close()
			break
		}
	}
	// The server frees the place when it sees the client gone.
	for r := openWatch(t, api, "/api/v3/agents", testTokens[auth.Developer]); r.StatusCode != 200; r = openWatch(t, api, "/api/v3/agents", testTokens[auth.Developer]) {
		if r.StatusCode != 429 {
			t.Fatalf("after a watch closed: %d", r.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// smallBuffers shrinks each connection's socket send buffer, so that a
// client that stops reading blocks the server after a few kilobytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A watcher that stops reading is dropped once it is WatchBuffer reads
// behind: when it reads again it finds the changes it had, then an ERROR
// event saying why, then the end. A watcher of the same list that reads
// keeps getting changes.
func TestSlowWatcherIsDropped(t *testing.T) {
	var logs lockedBuffer
	var o Options
	api, _, _ := newTestAPI(t, store.SQLite, func(opts *Options) {
		opts.WatchInterval = 5 * time.Millisecond
		opts.Limits = DefaultLimits
		opts.Limits.WatchBuffer = 2
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o = *opts
	})
	srv := httptest.NewUnstartedServer(New(o)) // the same store, on small socket buffers
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	pad := strings.Repeat("x", 40)
	create := func(i int) {
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": fmt.Sprintf("agent-%04d-%s", i, pad), "host": pad + ".example.com"}).Want(201)
	}
	for i := range 50 {
		create(i)
	}

	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(slow, "GET /api/v3/agents?watch=true HTTP/1.1\r\nHost: svcbridge\r\nAuthorization: Bearer %s\r\n\r\n", testTokens[auth.Admin])
	fast := bufio.NewReader(openWatch(t, &testAPI{t: t, srv: srv}, "/api/v3/agents", testTokens[auth.Viewer]).Body)

	// Changes until the server drops the slow watcher; the fast one reads.
	go func() {
		for {
			if _, err := fast.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	for i := 50; !strings.Contains(logs.String(), "watch dropped"); i++ {
		create(i)
		if i > 5000 {
			t.Fatalf("the slow watcher was never dropped:\n%s", logs.String())
		}
	}

	slow.SetDeadline(time.Now().Add(time.Minute)) // only so a broken server cannot hang the test
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("slow watch: %v %v", resp, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the slow watch did not end cleanly: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var last struct {
		Type   string
		Object struct{ Name, Message string }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "ERROR" || last.Object.Name != "TooSlowError" {
		t.Fatalf("the slow watch's last line: %s (%v)", lines[len(lines)-1], err)
	}
	if len(lines) < 51 {
		t.Errorf("the slow watch got %d lines before its end, want its initial state at least", len(lines))
	}
}
