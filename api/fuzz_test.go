package api

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"svcbridge/auth"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// FuzzRequests sends arbitrary documents to every route that decodes one,
// and arbitrary path and query parameters to routes that read them,
// through the real handler and both real stores (PostgreSQL refuses bytes
// SQLite keeps): whatever the input, the answer is never a 5xx and nothing
// panics.
func FuzzRequests(f *testing.F) {
	var handlers []http.Handler
	for _, dialect := range storetest.Dialects {
		handlers = append(handlers, New(Options{Store: storetest.Open(f, dialect), Reconciler: &recordingReconciler{},
			ControlPlane: service.ControlPlaneRemote, BridgePorts: store.PortRange{First: 10024, Last: 10100},
			BridgePortsRaw: "10024-10100", Tags: service.TagRule{Prefix: service.DefaultTagPrefix},
			Logger: slog.New(slog.DiscardHandler), Auth: testAuth()}))
	}
	// field "" sends doc as a JSON body, a field name as a multipart
	// upload, "path" puts doc, escaped, in place of the trailing %s, and
	// "cursor" puts doc there as a ?continue= token's key (its JSON,
	// base64-encoded as the API encodes it), so the cursor decoder meets
	// every key.
	type route struct{ method, path, field string }
	routes := []route{
		{"POST", "/api/v3/services", ""}, {"PATCH", "/api/v3/services/vendor", ""},
		{"POST", "/api/v3/services/yaml", "service"}, {"PATCH", "/api/v3/services/yaml/vendor", "service"},
		{"POST", "/api/v3/agents", ""}, {"PATCH", "/api/v3/agents/hub", ""}, {"POST", "/api/v3/agents/yaml", "agent"},
		{"POST", "/api/v3/microservices", ""}, {"PATCH", "/api/v3/microservices/x", ""},
		{"GET", "/api/v3/services/%s", "path"}, {"PATCH", "/api/v3/agents/%s", "path"},
		{"DELETE", "/api/v3/microservices/%s", "path"}, {"GET", "/api/v3/services/vendor/distribution?tags=%s", "path"},
		{"GET", "/api/v3/services?limit=%s", "path"}, {"GET", "/api/v3/services?limit=1&continue=%s", "cursor"},
		{"GET", "/api/v3/events?limit=1&continue=%s", "cursor"}, {"GET", "/api/v3/microservices?continue=%s", "cursor"},
	}
	send := func(h http.Handler, r route, doc []byte) int {
		path, body, ct := r.path, bytes.NewReader(doc), "application/json"
		switch r.field {
		case "":
		case "path":
			path = fmt.Sprintf(r.path, url.PathEscape(string(doc)))
			body = bytes.NewReader([]byte(`{}`))
		case "cursor":
			path = fmt.Sprintf(r.path, base64.RawURLEncoding.EncodeToString(doc))
		default:
			var buf bytes.Buffer
			w := multipart.NewWriter(&buf)
			fw, _ := w.CreateFormFile(r.field, "doc.yaml")
			fw.Write(doc)
			w.Close()
			body, ct = bytes.NewReader(buf.Bytes()), w.FormDataContentType()
		}
		req := httptest.NewRequest(r.method, path, body)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+testTokens[auth.Admin])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	// Something to update and refer to.
	for _, h := range handlers {
		send(h, routes[4], []byte(`{"name":"hub","routerMode":"interior","defaultRouter":true}`))
		send(h, routes[0], []byte(`{"name":"vendor","type":"external","resource":"203.0.113.10","targetPort":443}`))
	}
	for _, seed := range []string{
		`{"name":"a","type":"agent","resource":"hub","targetPort":22,"tags":["x: y"]}`,
		`{"targetPort":1e400}`, `[]`, `{"tags":[1,2]}`, "kind: Service\nmetadata: {name: vendor}\nspec: {type: external, resource: h, targetPort: 1}",
		"a: &a [*a, *a]", "kind: Agent\nmetadata:\n  name: fog\nspec:\n  routerMode: edge\n  upstreamRouters: [hub]",
		`{"application":"app","name":"ms","agent":"hub"}`, `{"tags":["\u0000"],"host":"a\r\nb"}`,
		"{\"name\":\"\xff\"}", `{"name":"a","name":"b"}`, "a\x00b", "hub", "a,b,a",
		// Issue 37: cursors, nesting, escapes, invisible characters, limits.
		`["vendor"]`, `["a\u0000"]`, `["\ud800"]`, `["2026-01-01T00:00:00Z","vendor","1"]`, `["2026-01-01T00:00:00Z","v\u0000","1"]`,
		`{"tags":["\ud800"]}`, `{"tags":["a\u202e"]}`, `{"x":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`,
		"kind: Service\nmetadata: {name: vendor}\nspec: {x: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}",
		"100000000", "99999999999999999999999", "a\u2066",
	} {
		for i := range routes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		r := routes[int(which)%len(routes)]
		for i, h := range handlers {
			if code := send(h, r, doc); code >= http.StatusInternalServerError {
				t.Fatalf("%s %s on %s answered %d for %q", r.method, r.path, storetest.Dialects[i], code, doc)
			}
		}
	})
}
