package api

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"svcbridge/store"
)

// TestRouterDocumentETag: both router routes answer an ETag of the
// document; a poll that names it gets 304 and no body, until the document
// changes.
func TestRouterDocumentETag(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		fog := createAgent(t, api, map[string]any{"name": "fog-a", "routerMode": "edge"})
		own := func(header ...string) *testResponse {
			return api.Do(http.MethodGet, "/api/v3/agent/router", nil, append([]string{"Authorization", "Bearer " + fog.Token}, header...)...)
		}
		for _, get := range []func(header ...string) *testResponse{
			own,
			func(header ...string) *testResponse {
				return api.Do(http.MethodGet, "/api/v3/agents/fog-a/router", nil, header...)
			},
		} {
			first := get().Want(http.StatusOK)
			etag := first.Header.Get("ETag")
			if len(etag) < 3 || etag[0] != '"' {
				t.Fatalf("ETag %q, want a quoted entity tag", etag)
			}
			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				r := get("If-None-Match", inm).Want(http.StatusNotModified)
				if len(r.Body) != 0 || r.Header.Get("ETag") != etag {
					t.Errorf("If-None-Match %s: body %q ETag %q", inm, r.Body, r.Header.Get("ETag"))
				}
			}
			get("If-None-Match", `"other"`).Want(http.StatusOK)
		}

		// A changed document has another tag: the old one gets it whole.
		old := own().Header.Get("ETag")
		err := st.InTx(context.Background(), func(tx *store.Tx) error {
			return tx.WriteRouter(context.Background(), fog.UUID, store.RouterWrite{Base: []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"x":1}`)})
		})
		if err != nil {
			t.Fatal(err)
		}
		r := own("If-None-Match", old).Want(http.StatusOK)
		if string(r.Body) != `{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"x":1}` || r.Header.Get("ETag") == old {
			t.Errorf("after a change: %s ETag %q (old %q)", r.Body, r.Header.Get("ETag"), old)
		}
	})
}

// A long poll (timeoutSeconds with If-None-Match) answers as soon as the
// agent's document changes, 304 after its timeout when it does not, and
// waits on an agent's having no router too ("none").
func TestRouterLongPoll(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		fog := createAgent(t, api, map[string]any{"name": "fog"})
		agent := bearer(fog.Token)
		etag := api.Do("GET", "/api/v3/agent/router", nil, agent...).Want(200).Header.Get("ETag")

		start := time.Now()
		api.Do("GET", "/api/v3/agent/router?timeoutSeconds=1", nil, append(agent, "If-None-Match", etag)...).Want(304)
		if waited := time.Since(start); waited < 900*time.Millisecond {
			t.Errorf("an unchanged long poll answered after %v, before its timeout", waited)
		}

		answered := make(chan *testResponse, 1)
		go func() {
			answered <- api.Do("GET", "/api/v3/agent/router?timeoutSeconds=30", nil, append(agent, "If-None-Match", etag)...)
		}()
		time.Sleep(200 * time.Millisecond)
		api.JSON("PATCH", "/api/v3/agents/fog", map[string]any{"routerMode": "interior"}).Want(200)
		select {
		case r := <-answered:
			if r.Status != 200 || r.Header.Get("ETag") == etag {
				t.Errorf("the long poll answered %d with ETag %s after a change", r.Status, r.Header.Get("ETag"))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the long poll did not answer a change")
		}

		api.JSON("PATCH", "/api/v3/agents/fog", map[string]any{"routerMode": "none"}).Want(200)
		none := api.Do("GET", "/api/v3/agent/router", nil, agent...).Want(404)
		if none.Header.Get("ETag") != `"none"` {
			t.Errorf("an agent without a router: ETag %q, want \"none\"", none.Header.Get("ETag"))
		}
		go func() {
			answered <- api.Do("GET", "/api/v3/agent/router?timeoutSeconds=30", nil, append(agent, "If-None-Match", `"none"`)...)
		}()
		time.Sleep(200 * time.Millisecond)
		api.JSON("PATCH", "/api/v3/agents/fog", map[string]any{"routerMode": "edge"}).Want(200)
		select {
		case r := <-answered:
			if r.Status != 200 {
				t.Errorf("the long poll of an agent given a router again answered %d", r.Status)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the long poll did not answer the router coming back")
		}
		api.Do("GET", "/api/v3/agent/router?timeoutSeconds=301", nil, agent...).WantError(400, "ValidationError",
			"Query parameter 'timeoutSeconds' must be an integer from 0 to 300")
	})
}

// TestRouterReportsOneAtATime: while one report of an agent is being read
// (its body still arriving), another report of the same agent is a 429
// with Retry-After, and another agent's is served; once the first ends,
// the agent may report again.
func TestRouterReportsOneAtATime(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	fog := createAgent(t, api, map[string]any{"name": "fog-a", "routerMode": "edge"})
	other := createAgent(t, api, map[string]any{"name": "fog-b", "routerMode": "edge"})
	report := func(token string) *testResponse {
		return api.JSON(http.MethodPut, "/api/v3/agent/router/status", map[string]any{"version": `"1"`}, "Authorization", "Bearer "+token)
	}

	// slowReport sends a report's headers and the start of its body on a
	// connection of its own, the rest to come; its answer's status comes
	// on done.
	rest := []byte(`"\"1\""}`)
	slowReport := func() (net.Conn, chan int) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(api.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		start := `{"version":`
		fmt.Fprintf(conn, "PUT /api/v3/agent/router/status HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", fog.Token, len(start)+len(rest), start)
		done := make(chan int, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				done <- -1
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		return conn, done
	}
	conn, done := slowReport()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := report(fog.Token)
		if r.Status == http.StatusTooManyRequests {
			if r.Header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
			break
		}
		select {
		case <-done:
			// This poll was read first, and the slow one refused: again.
			conn.Close()
			conn, done = slowReport()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second report while the first is read: %d %s, want 429", r.Status, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	report(other.Token).Want(http.StatusNoContent)
	conn.Write(rest)
	if code := <-done; code != http.StatusNoContent {
		t.Fatalf("the slow report: %d, want 204", code)
	}
	report(fog.Token).Want(http.StatusNoContent)
}
