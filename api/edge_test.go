package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"svcbridge/auth"
)

// TestHostileInputIsRefusedAtTheEdge holds issue 13's input cases on both
// stores: each answer is a 400 (413 for size) whose envelope names the
// field, identical on SQLite and PostgreSQL, and the store is unchanged.
func TestHostileInputIsRefusedAtTheEdge(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub"}})
		createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "plant-a"})
		createService(t, api, map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443, "tags": []string{"v"}})

		snapshot := func() string {
			var b strings.Builder
			for _, p := range []string{"/api/v3/services", "/api/v3/agents", "/api/v3/microservices"} {
				b.Write(api.Do(http.MethodGet, p, nil).Want(http.StatusOK).Body)
			}
			return b.String()
		}
		json := func(method, path, body string) func() *testResponse {
			return func() *testResponse { return api.JSON(method, path, body) }
		}
		yaml := func(method, path, field, doc string) func() *testResponse {
			return func() *testResponse { return api.Upload(method, path, field, doc) }
		}
		asViewer := func(method, path string) func() *testResponse {
			return func() *testResponse {
				return api.Do(method, path, nil, "Authorization", "Bearer "+testTokens[auth.Viewer])
			}
		}
		raw := func(head, body string) func() *testResponse {
			return func() *testResponse { return rawRequest(t, api, head, body) }
		}
		svcYAML := func(metadata, spec string) string {
			return "kind: Service\nmetadata:\n" + metadata + "spec:\n  type: external\n  resource: h.example.com\n" + spec
		}
		const (
			post, patch, get, del = http.MethodPost, http.MethodPatch, http.MethodGet, http.MethodDelete
			services, agents, ms  = "/api/v3/services", "/api/v3/agents", "/api/v3/microservices"
			nul, ctl              = "contains a control character (U+0000)", "contains a control character (U+000D)"
		)
		tooMany := strings.TrimSuffix(strings.Repeat("t,", 65), ",")
		deep := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}` }
		// token encodes a cursor as continueToken does, key its JSON as
		// given (continueToken would escape what a hostile client need not).
		token := func(key string) string { return url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte(key))) }
		twoFiles := func(method, path, field, doc string) func() *testResponse {
			return func() *testResponse {
				var body bytes.Buffer
				w := multipart.NewWriter(&body)
				for range 2 {
					part, _ := w.CreateFormFile(field, field+".yaml")
					io.WriteString(part, doc)
				}
				w.Close()
				return api.Do(method, path, &body, "Content-Type", w.FormDataContentType())
			}
		}
		withPart := func(name, value string) func() *testResponse {
			return func() *testResponse {
				var body bytes.Buffer
				w := multipart.NewWriter(&body)
				w.WriteField(name, value)
				part, _ := w.CreateFormFile("service", "service.yaml")
				io.WriteString(part, svcYAML("  name: vendor\n", "  targetPort: 1\n"))
				w.Close()
				return api.Do(http.MethodPatch, services+"/yaml/vendor", &body, "Content-Type", w.FormDataContentType())
			}
		}
		for _, tc := range []struct {
			name   string
			send   func() *testResponse
			status int
			msg    string
		}{
			// Strings in bodies, on every kind and both encodings.
			{"service tag NUL", json(post, services, `{"name":"n","type":"external","resource":"h","targetPort":1,"tags":["\u0000"]}`), 400, "Field 'tags[0]' " + nul},
			{"service tag NUL YAML", yaml(post, services+"/yaml", "service", svcYAML("  name: n\n  tags: [\"\\0\"]\n", "  targetPort: 1\n")), 400, "Field 'tags[0]' " + nul},
			{"service name invalid UTF-8", json(post, services, "{\"name\":\"a\xffb\"}"), 400, "Field 'name' is not valid UTF-8"},
			{"service resource NUL", json(patch, services+"/vendor", `{"resource":"h\u0000"}`), 400, "Field 'resource' " + nul},
			{"service bridge NUL", json(post, services, `{"name":"n","type":"agent","resource":"plant-a","targetPort":1,"defaultBridge":"hub\u0000"}`), 400, "Field 'defaultBridge' " + nul},
			{"service name CR YAML", yaml(patch, services+"/yaml/vendor", "service", svcYAML("  name: \"vendor\\r\"\n", "  targetPort: 1\n")), 400, "Field 'name' " + ctl},
			// Unknown and duplicated keys, repeated tags.
			{"service misspelt field", json(post, services, `{"name":"n","type":"external","resource":"h","targetport":1}`), 400, "Unknown field 'targetport'"},
			{"service PATCH of only a misspelt field", json(patch, services+"/vendor", `{"targetport":1}`), 400, "Unknown field 'targetport'"},
			{"service YAML typo", yaml(post, services+"/yaml", "service", svcYAML("  name: n\n", "  targetport: 1\n")), 400, "Unknown field 'spec.targetport' (line 7)"},
			{"service duplicated JSON key", json(patch, services+"/vendor", `{"targetPort":1,"targetPort":2}`), 400, "Invalid JSON: duplicated key 'targetPort'"},
			{"service repeated tag", json(patch, services+"/vendor", `{"tags":["a","b","a"]}`), 400, `Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
			{"service repeated tag YAML", yaml(patch, services+"/yaml/vendor", "service", svcYAML("  name: vendor\n  tags: [a, b, a]\n", "  targetPort: 1\n")), 400, `Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
			{"agent host CRLF", json(post, agents, `{"name":"x","host":"h\r\nX-Evil: 1"}`), 400, "Field 'host' " + ctl},
			{"agent host not a host", json(patch, agents+"/plant-a", `{"host":"a b"}`), 400, `Invalid format for field 'host': "a b" must be a DNS name or an IP address`},
			{"agent host NUL YAML", yaml(post, agents+"/yaml", "agent", "kind: Agent\nmetadata: {name: x}\nspec: {host: \"h\\0\"}\n"), 400, "Field 'host' " + nul},
			{"agent tag NUL", json(patch, agents+"/plant-a", `{"tags":["a\u0000"]}`), 400, "Field 'tags[0]' " + nul},
			{"agent upstream NUL", json(post, agents, `{"name":"x","upstreamRouters":["hub\u0000"]}`), 400, "Field 'upstreamRouters[0]' " + nul},
			{"agent repeated tag", json(patch, agents+"/plant-a", `{"tags":["a","a"]}`), 400, `Field 'tags[1]' repeats tags[0] ("a"): each entry may be given once`},
			{"agent unknown field", json(post, agents, `{"name":"x","hostname":"h"}`), 400, "Unknown field 'hostname'"},
			{"agent duplicated key", json(post, agents, `{"name":"x","name":"y"}`), 400, "Invalid JSON: duplicated key 'name'"},
			{"agent YAML typo", yaml(post, agents+"/yaml", "agent", "kind: Agent\nmetadata: {name: x}\nspec:\n  routermode: edge\n"), 400, "Unknown field 'spec.routermode' (line 4)"},
			{"microservice unknown field", json(post, ms, `{"application":"shop","name":"x","agent":"hub","hostNetwork":true}`), 400, "Unknown field 'hostNetwork'"},
			{"microservice name NUL", json(post, ms, `{"application":"shop","name":"x\u0000","agent":"hub"}`), 400, "Field 'name' " + nul},
			{"microservice agent invalid UTF-8", json(post, ms, "{\"application\":\"shop\",\"name\":\"x\",\"agent\":\"\xc0\x80\"}"), 400, "Field 'agent' is not valid UTF-8"},
			// Path and query parameters: a viewer's GET too.
			{"viewer GET name with NUL", asViewer(get, services+"/a%00b"), 400, "Path parameter 'name' " + nul},
			{"viewer GET name not UTF-8", asViewer(get, services+"/%ff"), 400, "Path parameter 'name' is not valid UTF-8"},
			{"GET agent with NUL", asViewer(get, agents+"/%00/services"), 400, "Path parameter 'agent' " + nul},
			{"DELETE service with CR", json(del, services+"/vendor%0d", ""), 400, "Path parameter 'name' " + ctl},
			{"PATCH microservice with NUL", json(patch, ms+"/a%00", `{}`), 400, "Path parameter 'uuid' " + nul},
			{"preview tag NUL", asViewer(get, services+"/vendor/distribution?tags=a%00"), 400, "Query parameter 'tags' " + nul},
			{"preview too many tags", asViewer(get, services+"/vendor/distribution?tags="+url.QueryEscape(tooMany)), 400, "Query parameter 'tags' lists 65 tags, more than the limit of 64"},
			{"preview too many repeated tags", asViewer(get, services+"/vendor/distribution?tags=a"+strings.Repeat("&tags=a", 64)), 400, "Query parameter 'tags' lists 65 tags, more than the limit of 64"},
			// Issue 37: nesting, escapes that decode to what the text rule
			// refuses, invisible characters, the cursor, the preview's tags,
			// host labels, uploads.
			{"deep body before authentication", json(post, "/api/v3/user/refresh", deep(4000)), 400, "Invalid JSON: nesting deeper than 32 levels"},
			{"deep service body", json(patch, services+"/vendor", deep(33)), 400, "Invalid JSON: nesting deeper than 32 levels"},
			{"deep service YAML", yaml(patch, services+"/yaml/vendor", "service", svcYAML("  name: vendor\n", "  targetPort: 1\n  x: "+strings.Repeat("[", 40)+strings.Repeat("]", 40)+"\n")), 400, "Error parsing YAML: nesting deeper than 32 levels"},
			{"service tag lone surrogate", json(patch, services+"/vendor", `{"tags":["a","\ud800"]}`), 400, `Field 'tags[1]' contains an unpaired UTF-16 surrogate (\uD800)`},
			{"surrogate in an ignored field", json(patch, services+"/vendor", `{"provisioningError":"\udfff"}`), 400, `Field 'provisioningError' contains an unpaired UTF-16 surrogate (\uDFFF)`},
			{"NUL in an ignored field", json(patch, services+"/vendor", `{"workflowId":"\u0000"}`), 400, "Field 'workflowId' " + nul},
			{"service tag zero-width space", json(patch, services+"/vendor", `{"tags":["v\u200b"]}`), 400, "Field 'tags[0]' contains an invisible format character (U+200B)"},
			{"service tag bidi override YAML", yaml(patch, services+"/yaml/vendor", "service", svcYAML("  name: vendor\n  tags: [\"\u202ev\"]\n", "  targetPort: 1\n")), 400, "Field 'tags[0]' contains an invisible format character (U+202E)"},
			{"agent tag isolate", json(patch, agents+"/plant-a", `{"tags":["a\u2066b\u2069"]}`), 400, "Field 'tags[0]' contains an invisible format character (U+2066)"},
			{"agent tag tag character", json(post, agents, `{"name":"x","tags":["a\udb40\udc41"]}`), 400, "Field 'tags[0]' contains an invisible format character (U+E0041)"},
			{"agent name BOM", json(post, agents, `{"name":"\ufeffx"}`), 400, "Field 'name' contains an invisible format character (U+FEFF)"},
			{"path parameter bidi override", asViewer(get, services+"/%E2%80%AEvendor"), 400, "Path parameter 'name' contains an invisible format character (U+202E)"},
			{"query parameter word joiner", asViewer(get, services+"?x=%E2%81%A0"), 400, "Query parameter 'x' contains an invisible format character (U+2060)"},
			{"services cursor with NUL", asViewer(get, services+"?limit=1&continue="+token(`["a\u0000"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"events cursor with NUL", asViewer(get, "/api/v3/events?limit=1&continue="+token(`["2026-01-01T00:00:00Z","a\u0000","1"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"service events cursor with NUL", asViewer(get, services+"/vendor/events?continue="+token(`["2026-01-01T00:00:00Z","vendor\u0000","1"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"cursor with a lone surrogate", asViewer(get, services+"?continue="+token(`["\ud800"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"cursor with invalid UTF-8", asViewer(get, agents+"?continue="+token("[\"\xff\"]")), 400, "Query parameter 'continue' is not a token this API gave"},
			{"cursor with a bidi override", asViewer(get, ms+"?continue="+token(`["a","\u202e"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"cursor too long", asViewer(get, services+"?continue="+token(`["`+strings.Repeat("a", 400)+`"]`)), 400, "Query parameter 'continue' is not a token this API gave"},
			{"limit not a number", asViewer(get, "/api/v3/events?limit=1e3"), 400, "Query parameter 'limit' must be a positive integer"},
			{"preview repeated tag", asViewer(get, services+"/vendor/distribution?tags=a,b&tags=a"), 400, `Query parameter 'tags': Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
			{"preview tag too long", asViewer(get, services+"/vendor/distribution?tags="+strings.Repeat("t", 1025)), 400, "Query parameter 'tags': Field 'tags[0]' is longer than 1024 characters"},
			{"preview blank tag", asViewer(get, services+"/vendor/distribution?tags=a,,b"), 400, "Query parameter 'tags': Field 'tags[1]' must not be empty or blank"},
			{"preview invisible tag", asViewer(get, services+"/vendor/distribution?tags=a%E2%80%8B"), 400, "Query parameter 'tags' contains an invisible format character (U+200B)"},
			{"agent host label of 64", json(patch, agents+"/plant-a", `{"host":"`+strings.Repeat("a", 64)+`.example.com"}`), 400, `Invalid format for field 'host': "` + strings.Repeat("a", 64) + `.example.com" must be a DNS name or an IP address`},
			{"service resource label of 64", json(post, services, `{"name":"n","type":"external","resource":"h.`+strings.Repeat("b", 64)+`","targetPort":1}`), 400, "Invalid resource 'h." + strings.Repeat("b", 64) + "' for type external: must be a DNS name or an IP address"},
			{"two service files", twoFiles(patch, services+"/yaml/vendor", "service", svcYAML("  name: vendor\n", "  targetPort: 1\n")), 400, "Multipart field 'service' holds 2 files: send exactly one"},
			{"two agent files", twoFiles(post, agents+"/yaml", "agent", "kind: Agent\nmetadata: {name: x}\nspec: {}\n"), 400, "Multipart field 'agent' holds 2 files: send exactly one"},
			{"multipart part with NUL", withPart("note", "a\x00"), 400, "Multipart part 'note' " + nul},
			{"multipart part name bidi", withPart("a\u202e", "x"), 400, "Multipart part 'a\u202e' contains an invisible format character (U+202E)"},
			// Bodies that are too large or cut short.
			{"huge Content-Length", raw("POST "+services+" HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5000000000\r\n", `{}`), 413, fmt.Sprintf("Request body is larger than %d bytes", MaxBody)},
			{"huge Content-Length upload", raw("POST "+agents+"/yaml HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 5000000000\r\n", ""), 413, fmt.Sprintf("Request body is larger than %d bytes", MaxYAMLBody)},
			{"truncated body", raw("POST "+services+" HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n", `{"name":"n"`), 400, "Request body could not be read: unexpected EOF"},
			// Writes that take no body read it first: a malformed one is
			// refused before anything is done.
			{"DELETE with a malformed chunked body", raw("DELETE "+services+"/vendor HTTP/1.1\r\nTransfer-Encoding: chunked\r\n", "zz\r\n"), 400, "Request body could not be read: invalid byte in chunk length"},
			{"reconcile with a malformed chunked body", raw("POST "+services+"/vendor/reconcile HTTP/1.1\r\nTransfer-Encoding: chunked\r\n", "1\r\nab\r\n"), 400, "Request body could not be read: malformed chunked encoding"},
			{"token rotation with a body cut short", raw("POST "+agents+"/plant-a/token HTTP/1.1\r\nContent-Length: 10\r\n", "{}"), 400, "Request body could not be read: unexpected EOF"},
			{"microservice DELETE with a huge body", raw("DELETE "+ms+"/x HTTP/1.1\r\nContent-Length: 5000000000\r\n", ""), 413, fmt.Sprintf("Request body is larger than %d bytes", MaxBody)},
			{"truncated agent body", raw("PATCH "+agents+"/plant-a HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n", `{"tags":[]}`), 400, "Request body could not be read: unexpected EOF"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := snapshot()
				tc.send().WantError(tc.status, map[int]string{400: "ValidationError", 413: "PayloadTooLargeError"}[tc.status], tc.msg)
				if after := snapshot(); after != before {
					t.Fatalf("the store changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	})
}

// rawRequest sends head (request line and headers, without the blank
// line) and body over a plain connection, then closes its sending side:
// a client that announces more than it sends, or far more than it may.
func rawRequest(t *testing.T, api *testAPI, head, body string) *testResponse {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(api.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%sHost: test\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n%s", head, testTokens[auth.Admin], body)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: %v", head, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &testResponse{t: t, req: strings.SplitN(head, "\r\n", 2)[0], Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// TestGETAnswersCanBeSentBack: every field a GET answers is accepted (and
// ignored when it is not a spec field) by the PATCH of the same kind, so
// the strict field rule never refuses a client's own round trip, nulls
// included (an unset k8sType or servicePort is absent, as in the
// reference, so no null reaches a field where null is a type error).
func TestGETAnswersCanBeSentBack(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub"}, "tags": []string{"service.iofog.org/tag: all"}})
		m := createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "plant-a"})
		createService(t, api, map[string]any{"name": "checkout", "type": "microservice", "resource": "shop/cart", "targetPort": 80, "tags": []string{"x"}})
		for _, tc := range []struct {
			path   string
			status int
		}{
			{"/api/v3/services/checkout", http.StatusNoContent}, // it changes nothing
			{"/api/v3/agents/plant-a", http.StatusOK},
			{"/api/v3/microservices/" + m.UUID, http.StatusOK},
		} {
			got := api.Do(http.MethodGet, tc.path, nil).Want(http.StatusOK)
			if !strings.Contains(string(got.Body), `"createdAt"`) {
				t.Fatalf("GET %s answered %s", tc.path, got.Body)
			}
			api.Do(http.MethodPatch, tc.path, bytes.NewReader(got.Body), "Content-Type", "application/json").Want(tc.status)
		}
	})
}
