package api

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"svcbridge/document"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// BenchmarkWriteBodies is what a write costs the api, in process, with a
// normal body and with the largest bodies a client may send that hold
// nothing the route reads. The target (issue 52): no request costs more
// than 5x a normal request's CPU, nor holds more than twice its body in
// memory beyond what a normal one does. Compare each case's ns/op and B/op
// with "normal" (JSON) or "yaml-normal" of the same run.
func BenchmarkWriteBodies(b *testing.B) {
	st := storetest.Open(b, store.SQLite)
	h := New(testOptions(st, &recordingReconciler{}))
	api := serveTestAPI(b, testOptions(st, &recordingReconciler{}))
	hub := createAgent(b, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "web", "type": "external", "resource": "web.example.com", "targetPort": 80}).Want(201)

	// zeros is a flow list of zeros (JSON and YAML) as long as fits in a
	// body of the limit beside the rest of it.
	zeros := func(limit int) string { return "[" + strings.Repeat("0,", (limit-500)/2) + "0]" }
	yamlDoc := func(metadata string, port int) []byte {
		return fmt.Appendf(nil, "kind: Service\nmetadata:\n  name: web\n%sspec:\n  type: external\n  resource: web.example.com\n  targetPort: %d\n", metadata, port)
	}
	admin, agent := "Bearer "+testTokens["admin"], "Bearer "+hub.Token
	cases := []struct {
		name, method, path, authorization string
		yaml                              bool
		body                              func(i int) []byte
		status                            int
	}{
		{"normal", "PATCH", "/api/v3/services/web", admin, false,
			func(i int) []byte { return fmt.Appendf(nil, `{"targetPort":%d}`, 80+i) }, 204},
		{"ignored-field", "PATCH", "/api/v3/services/web", admin, false,
			func(int) []byte { return []byte(`{"targetPort":80,"junk":` + zeros(MaxBody) + `}`) }, 400},
		{"known-field", "PATCH", "/api/v3/services/web", admin, false,
			func(int) []byte { return []byte(`{"tags":["\n",` + zeros(MaxBody)[1:] + `}`) }, 400},
		{"yaml-normal", "PATCH", "/api/v3/services/yaml/web", admin, true,
			func(i int) []byte { return yamlDoc("", 80+i) }, 204},
		{"yaml-ignored", "PATCH", "/api/v3/services/yaml/web", admin, true,
			func(int) []byte { return yamlDoc("  junk: "+zeros(MaxYAMLBody)+"\n", 80) }, 400},
		{"yaml-most-values", "PATCH", "/api/v3/services/yaml/web", admin, true,
			func(int) []byte {
				return yamlDoc("  junk: ["+strings.Repeat("0,", document.MaxYAMLValues-40)+"0]\n", 80)
			}, 400},
		{"report-ignored", "PUT", "/api/v3/agent/router/status", agent, false,
			func(int) []byte { return []byte(`{"version":"x","junk":` + zeros(ReportMaxBody) + `}`) }, 400},
		{"report-largest-valid", "PUT", "/api/v3/agent/router/status", agent, false,
			func(int) []byte { return largestReport(ReportMaxBody) }, 204},
		{"report-items", "PUT", "/api/v3/agent/router/status", agent, false,
			func(int) []byte { return []byte(`{"version":"x","failed":` + zeros(ReportMaxBody) + `}`) }, 400},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			// Two bodies made ahead, so that the figures are the server's.
			var bodies [2][]byte
			var types [2]string
			for i := range bodies {
				bodies[i], types[i] = tc.body(i), "application/json"
				if tc.yaml {
					bodies[i], types[i] = multipartFile("service", bodies[i])
				}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(bodies[i%2]))
				r.Header.Set("Content-Type", types[i%2])
				r.Header.Set("Authorization", tc.authorization)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != tc.status {
					b.Fatalf("%s: %d %s", tc.name, w.Code, w.Body)
				}
			}
		})
	}
}

// largestReport is a valid router report of as many refused listeners as
// fit in limit: what a router refusing thousands of bridges sends.
func largestReport(limit int) []byte {
	body := []byte(`{"version":"x","failed":[`)
	for i := 0; ; i++ {
		entry := fmt.Appendf(nil, `{"type":"tcpListener","name":"svc-%05d-listener","reason":"address 0.0.0.0:%d is in use on the host"}`, i, 10024+i%50000)
		if len(body)+len(entry)+3 > limit {
			break
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, entry...)
	}
	return append(body, "]}"...)
}

// multipartFile is content as the one file of field.
func multipartFile(field string, content []byte) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, _ := w.CreateFormFile(field, field+".yaml")
	_, _ = fw.Write(content)
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}
