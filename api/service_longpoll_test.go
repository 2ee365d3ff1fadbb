package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"svcbridge/service"
	"svcbridge/store"
)

// A service's GET answers an ETag of what it shows; If-None-Match naming
// it gets a 304 without a body. With timeoutSeconds it is a long poll: it
// answers as soon as the service is written, 304 after its timeout when
// it is not. The test's servers read a waiting service again only hourly,
// so an answer can only come from the change feed's wake.
func TestServiceLongPoll(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect, func(o *Options) { o.ServiceRecheck = time.Hour })
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		createService(t, api, map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
		path := servicesPath + "/web"
		first := api.Do(http.MethodGet, path, nil).Want(http.StatusOK)
		etag := first.Header.Get("ETag")
		if etag == "" {
			t.Fatal("no ETag on a service's GET")
		}
		if again := api.Do(http.MethodGet, path, nil).Want(http.StatusOK); again.Header.Get("ETag") != etag {
			t.Errorf("an unchanged service answered ETag %s, then %s", etag, again.Header.Get("ETag"))
		}
		if r := api.Do(http.MethodGet, path, nil, "If-None-Match", etag).Want(http.StatusNotModified); len(r.Body) != 0 {
			t.Errorf("a 304 with a body: %s", r.Body)
		}
		api.Do(http.MethodGet, path, nil, "If-None-Match", `"other"`).Want(http.StatusOK)

		start := time.Now()
		api.Do(http.MethodGet, path+"?timeoutSeconds=1", nil, "If-None-Match", etag).Want(http.StatusNotModified)
		if waited := time.Since(start); waited < 900*time.Millisecond {
			t.Errorf("an unchanged long poll answered after %v, before its timeout", waited)
		}

		// The pass's outcome, as the worker records it.
		poll := func() <-chan *testResponse {
			answered := make(chan *testResponse, 1)
			go func() {
				answered <- api.Do(http.MethodGet, path+"?timeoutSeconds=60", nil, "If-None-Match", etag)
			}()
			time.Sleep(200 * time.Millisecond) // the poll waits
			return answered
		}
		answered := poll()
		err := st.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.SetServiceStatus(context.Background(), "web", store.PassResult{Generation: 1, Status: service.StatusReady})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		etag = wantAnswer(t, answered, "ready", "the pass's outcome")

		answered = poll()
		api.JSON(http.MethodPatch, path, map[string]any{"targetPort": 8443}).Want(http.StatusNoContent)
		etag = wantAnswer(t, answered, "pending", "a change of its spec")

		answered = poll()
		api.Do(http.MethodDelete, path, nil).Want(http.StatusNoContent)
		select {
		case r := <-answered:
			// Deleted with no objects on routers: gone at once.
			if r.Status != http.StatusNotFound {
				t.Errorf("the long poll answered its deletion with %d: %s", r.Status, r.Body)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the long poll did not answer the service's deletion")
		}

		api.Do(http.MethodGet, path+"?timeoutSeconds=301", nil, "If-None-Match", etag).WantError(400, "ValidationError",
			"Query parameter 'timeoutSeconds' must be an integer from 0 to 300")
	})
}

// wantAnswer waits for a long poll's answer: a 200 showing status, with a
// new ETag, which it returns.
func wantAnswer(t *testing.T, answered <-chan *testResponse, status, after string) string {
	t.Helper()
	select {
	case r := <-answered:
		var got struct {
			ProvisioningStatus string `json:"provisioningStatus"`
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &got) != nil || got.ProvisioningStatus != status {
			t.Fatalf("after %s the long poll answered %d: %s", after, r.Status, r.Body)
		}
		return r.Header.Get("ETag")
	case <-time.After(30 * time.Second):
		t.Fatalf("the long poll did not answer %s", after)
	}
	return ""
}
