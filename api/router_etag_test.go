package api

import (
	"context"
	"net/http"
	"testing"

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
