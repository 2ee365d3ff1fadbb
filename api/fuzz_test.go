package api

import (
	"bytes"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"svcbridge/auth"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// FuzzRequests sends arbitrary documents to every route that decodes one,
// through the real handler and store: whatever the input, the answer is
// never a 5xx and nothing panics.
func FuzzRequests(f *testing.F) {
	st := storetest.Open(f, store.SQLite)
	h := New(Options{Store: st, Reconciler: &recordingReconciler{}, ControlPlane: service.ControlPlaneRemote,
		BridgePorts: store.PortRange{First: 10024, Last: 10100}, BridgePortsRaw: "10024-10100",
		Tags: service.TagRule{Prefix: service.DefaultTagPrefix}, Logger: slog.New(slog.DiscardHandler), Auth: testAuth()})
	type route struct{ method, path, field string }
	routes := []route{
		{"POST", "/api/v3/services", ""}, {"PATCH", "/api/v3/services/vendor", ""},
		{"POST", "/api/v3/services/yaml", "service"}, {"PATCH", "/api/v3/services/yaml/vendor", "service"},
		{"POST", "/api/v3/agents", ""}, {"PATCH", "/api/v3/agents/hub", ""}, {"POST", "/api/v3/agents/yaml", "agent"},
		{"POST", "/api/v3/microservices", ""},
	}
	send := func(r route, doc []byte) int {
		body, ct := bytes.NewReader(doc), "application/json"
		if r.field != "" {
			var buf bytes.Buffer
			w := multipart.NewWriter(&buf)
			fw, _ := w.CreateFormFile(r.field, "doc.yaml")
			fw.Write(doc)
			w.Close()
			body, ct = bytes.NewReader(buf.Bytes()), w.FormDataContentType()
		}
		req := httptest.NewRequest(r.method, r.path, body)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+testTokens[auth.Admin])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	// Something to update and refer to.
	send(routes[4], []byte(`{"name":"hub","routerMode":"interior","defaultRouter":true}`))
	send(routes[0], []byte(`{"name":"vendor","type":"external","resource":"203.0.113.10","targetPort":443}`))
	for _, seed := range []string{
		`{"name":"a","type":"agent","resource":"hub","targetPort":22,"tags":["x: y"]}`,
		`{"targetPort":1e400}`, `[]`, `{"tags":[1,2]}`, "kind: Service\nmetadata: {name: vendor}\nspec: {type: external, resource: h, targetPort: 1}",
		"a: &a [*a, *a]", "kind: Agent\nmetadata:\n  name: fog\nspec:\n  routerMode: edge\n  upstreamRouters: [hub]",
		`{"application":"app","name":"ms","agent":"hub"}`,
	} {
		for i := range routes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		r := routes[int(which)%len(routes)]
		if code := send(r, doc); code >= http.StatusInternalServerError {
			t.Fatalf("%s %s answered %d for %q", r.method, r.path, code, doc)
		}
	})
}
