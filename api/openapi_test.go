package api

// The OpenAPI document is hand-written; these tests keep it honest: it
// names exactly the routes the engine serves, it is a well-formed OpenAPI
// 3.0 document, and what the handlers answer is what it documents (status
// codes and body schemas), including its own examples.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/store"
)

// oaDoc is the parsed document with the helpers the tests need.
type oaDoc struct {
	root map[string]any
}

func loadOpenAPI(t *testing.T) *oaDoc {
	t.Helper()
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(string(openAPIDocument)))
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if dec.More() {
		t.Fatal("openapi.json holds more than one JSON value")
	}
	return &oaDoc{root: root}
}

var oaMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations returns "METHOD /path" → operation.
func (d *oaDoc) operations() map[string]map[string]any {
	out := map[string]map[string]any{}
	paths, _ := d.root["paths"].(map[string]any)
	for p, item := range paths {
		item, _ := item.(map[string]any)
		for _, m := range oaMethods {
			if op, ok := item[m].(map[string]any); ok {
				out[strings.ToUpper(m)+" "+p] = op
			}
		}
	}
	return out
}

// pointer resolves a local JSON pointer such as #/components/schemas/Service.
func (d *oaDoc) pointer(ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = d.root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is not in an object", ref, tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %q: no %q", ref, tok)
		}
	}
	return cur, nil
}

// deref follows $ref chains (bounded, against cycles).
func (d *oaDoc) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; i < 16 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		target, err := d.pointer(ref)
		if err != nil {
			return nil
		}
		m, _ = target.(map[string]any)
	}
	return m
}

// ginRoutes returns the routes the engine serves as "METHOD /path/{param}".
func ginRoutes(t *testing.T) []string {
	t.Helper()
	engine, ok := New(Options{}).(*gin.Engine)
	if !ok {
		t.Fatal("New does not return a *gin.Engine")
	}
	param := regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)
	var out []string
	for _, r := range engine.Routes() {
		out = append(out, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIDescribesExactlyTheServedRoutes: every route the engine
// serves is in the document, and the document has no other.
func TestOpenAPIDescribesExactlyTheServedRoutes(t *testing.T) {
	served := ginRoutes(t)
	var documented []string
	for k := range loadOpenAPI(t).operations() {
		documented = append(documented, k)
	}
	slices.Sort(documented)
	var undocumented, unserved []string
	for _, r := range served {
		if !slices.Contains(documented, r) {
			undocumented = append(undocumented, r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			unserved = append(unserved, r)
		}
	}
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("api/openapi.json and the routes of api.New differ:\nserved, not documented: %v\ndocumented, not served: %v", undocumented, unserved)
	}
	if !slices.Contains(served, "GET /openapi.json") {
		t.Fatal("the document itself is not served")
	}
}

// TestOpenAPIDocumentIsWellFormed checks the structure OpenAPI 3.0 asks
// for, as far as the document uses it: every $ref resolves, path
// templates and path parameters agree, operations have unique ids, known
// tags, responses with descriptions, and every example fits its schema.
func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	d := loadOpenAPI(t)
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if v, _ := d.root["openapi"].(string); !regexp.MustCompile(`^3\.0\.\d+$`).MatchString(v) {
		bad("openapi is %q, want 3.0.x", v)
	}
	info, _ := d.root["info"].(map[string]any)
	if s, _ := info["title"].(string); s == "" {
		bad("info.title is missing")
	}
	if s, _ := info["version"].(string); s == "" {
		bad("info.version is missing")
	}
	// Servers are relative to where the document is served: an absolute
	// URL would send a client reading another installation's document here.
	servers, _ := d.root["servers"].([]any)
	for _, sv := range servers {
		if u, _ := sv.(map[string]any)["url"].(string); !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") {
			bad("server %q is not relative to the document", u)
		}
	}

	// Every $ref anywhere resolves.
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, err := d.pointer(ref); err != nil {
					bad("%s: %v", at, err)
				}
			}
			for k, c := range v {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range v {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(d.root, "#")

	tags := map[string]bool{}
	for _, tg := range d.root["tags"].([]any) {
		tags[tg.(map[string]any)["name"].(string)] = true
	}
	schemes, _ := d.deref(d.root["components"])["securitySchemes"].(map[string]any)
	ids := map[string]string{}
	template := regexp.MustCompile(`\{([^}]+)\}`)
	code := regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5]XX|default)$`)
	for p, rawItem := range d.root["paths"].(map[string]any) {
		item := rawItem.(map[string]any)
		if !strings.HasPrefix(p, "/") || strings.Contains(p, ":") {
			bad("path %q must start with / and use {param}, not :param", p)
		}
		var inTemplate []string
		for _, m := range template.FindAllStringSubmatch(p, -1) {
			inTemplate = append(inTemplate, m[1])
		}
		for k := range item {
			if k != "parameters" && k != "summary" && k != "description" && !slices.Contains(oaMethods, k) {
				bad("path %s: unknown key %q", p, k)
			}
		}
		for _, m := range oaMethods {
			rawOp, ok := item[m]
			if !ok {
				continue
			}
			op := rawOp.(map[string]any)
			where := strings.ToUpper(m) + " " + p
			id, _ := op["operationId"].(string)
			if id == "" {
				bad("%s: no operationId", where)
			} else if other, dup := ids[id]; dup {
				bad("%s: operationId %s already used by %s", where, id, other)
			}
			ids[id] = where
			for _, tg := range op["tags"].([]any) {
				if !tags[tg.(string)] {
					bad("%s: tag %q is not declared", where, tg)
				}
			}
			// Path parameters: declared on the path item or the operation.
			var declared []string
			for _, list := range []any{item["parameters"], op["parameters"]} {
				ps, _ := list.([]any)
				for _, rp := range ps {
					prm := d.deref(rp)
					if prm["in"] == "path" {
						declared = append(declared, prm["name"].(string))
						if prm["required"] != true {
							bad("%s: path parameter %v must be required", where, prm["name"])
						}
					}
					if prm["schema"] == nil {
						bad("%s: parameter %v has no schema", where, prm["name"])
					}
				}
			}
			slices.Sort(declared)
			want := slices.Sorted(slices.Values(inTemplate))
			if !slices.Equal(declared, want) {
				bad("%s: path parameters %v declared, %v in the template", where, declared, want)
			}
			if rb := d.deref(op["requestBody"]); rb != nil {
				content, _ := rb["content"].(map[string]any)
				if len(content) == 0 {
					bad("%s: requestBody without content", where)
				}
			}
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				bad("%s: no responses", where)
			}
			for c, r := range responses {
				if !code.MatchString(c) {
					bad("%s: response code %q", where, c)
				}
				if s, _ := d.deref(r)["description"].(string); s == "" {
					bad("%s %s: response without description", where, c)
				}
			}
			if sec, ok := op["security"].([]any); ok {
				for _, req := range sec {
					for name := range req.(map[string]any) {
						if schemes[name] == nil {
							bad("%s: security scheme %q is not declared", where, name)
						}
					}
				}
			}
		}
	}

	// Schemas: required names declared properties; examples fit.
	var schemasWalk func(v any, at string)
	schemasWalk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if req, ok := v["required"].([]any); ok {
				if props, ok := v["properties"].(map[string]any); ok {
					for _, r := range req {
						if _, ok := props[r.(string)]; !ok {
							bad("%s: required %q is not a property", at, r)
						}
					}
				}
			}
			if ex, ok := v["example"]; ok {
				if _, isSchema := v["type"]; isSchema || v["allOf"] != nil || v["oneOf"] != nil || v["$ref"] != nil {
					for _, p := range d.conform(v, ex, at+"/example") {
						bad("%s", p)
					}
				} else if s, ok := v["schema"]; ok { // a media type object
					for _, p := range d.conform(s, ex, at+"/example") {
						bad("%s", p)
					}
				}
			}
			for k, c := range v {
				schemasWalk(c, at+"/"+k)
			}
		case []any:
			for i, c := range v {
				schemasWalk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	schemasWalk(d.root, "#")

	if len(problems) > 0 {
		slices.Sort(problems)
		t.Fatalf("api/openapi.json:\n%s", strings.Join(problems, "\n"))
	}
}

// conform checks value against a schema, strictly: an object may not carry
// properties the schema does not declare (unless additionalProperties
// allows them), so a field the handlers add must be documented.
func (d *oaDoc) conform(schema, value any, at string) []string {
	var out []string
	d.check(schema, value, at, true, &out)
	return out
}

func (d *oaDoc) check(rawSchema, v any, at string, strict bool, out *[]string) {
	bad := func(format string, args ...any) { *out = append(*out, at+": "+fmt.Sprintf(format, args...)) }
	s := d.deref(rawSchema)
	if s == nil {
		bad("unresolvable schema")
		return
	}
	if one, ok := s["oneOf"].([]any); ok {
		// Exactly one branch must take the value, strictly.
		var fits int
		var why []string
		for _, b := range one {
			var p []string
			d.check(b, v, at, strict, &p)
			if len(p) == 0 {
				fits++
			}
			why = append(why, p...)
		}
		if fits != 1 {
			bad("fits %d of the oneOf branches, want 1: %s", fits, strings.Join(why, "; "))
		}
		return
	}
	if all, ok := s["allOf"].([]any); ok {
		// Each branch checks its part; strictness is about their union.
		declared := map[string]bool{}
		for _, b := range all {
			d.check(b, v, at, false, out)
			for k := range d.properties(b) {
				declared[k] = true
			}
		}
		if obj, ok := v.(map[string]any); ok && strict {
			for k := range obj {
				if !declared[k] {
					bad("property %q is not documented", k)
				}
			}
		}
		return
	}
	if v == nil {
		if s["nullable"] != true {
			bad("null, but the schema is not nullable")
		}
		return
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v is not one of %v", v, enum)
	}
	switch typ, _ := s["type"].(string); typ {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			bad("%T, want an object", v)
			return
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				bad("required property %q is missing", r)
			}
		}
		for k, pv := range obj {
			if ps, ok := props[k]; ok {
				d.check(ps, pv, at+"."+k, true, out)
				continue
			}
			switch extra := s["additionalProperties"].(type) {
			case bool:
				if !extra {
					bad("property %q is not allowed", k)
				}
			case map[string]any:
				d.check(extra, pv, at+"."+k, true, out)
			default:
				if strict && props != nil {
					bad("property %q is not documented", k)
				}
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			bad("%T, want an array", v)
			return
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(arr)) > n {
			bad("%d items, at most %v", len(arr), n)
		}
		for i, it := range arr {
			d.check(s["items"], it, fmt.Sprintf("%s[%d]", at, i), true, out)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("%T, want a string", v)
			return
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			bad("%q does not match %s", str, p)
		}
		if n, ok := s["maxLength"].(float64); ok && float64(utf8.RuneCountInString(str)) > n {
			bad("longer than %v", n)
		}
		if n, ok := s["minLength"].(float64); ok && float64(utf8.RuneCountInString(str)) < n {
			bad("shorter than %v", n)
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				bad("%q is not a date-time", str)
			}
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			bad("%T, want a %s", v, typ)
			return
		}
		if typ == "integer" && f != math.Trunc(f) {
			bad("%v is not an integer", f)
		}
		if m, ok := s["minimum"].(float64); ok && f < m {
			bad("%v is below %v", f, m)
		}
		if m, ok := s["maximum"].(float64); ok && f > m {
			bad("%v is above %v", f, m)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("%T, want a boolean", v)
		}
	case "":
		// Any value.
	default:
		bad("unknown schema type %q", typ)
	}
}

// properties returns the declared properties of a schema (allOf merged).
func (d *oaDoc) properties(raw any) map[string]any {
	s := d.deref(raw)
	out := map[string]any{}
	for _, b := range asList(s["allOf"]) {
		for k, v := range d.properties(b) {
			out[k] = v
		}
	}
	props, _ := s["properties"].(map[string]any)
	for k, v := range props {
		out[k] = v
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// checkResponse fails unless the operation documents the response's status
// and the response fits it: its media type, and a JSON body its schema.
func (d *oaDoc) checkResponse(t *testing.T, method, template string, r *testResponse) {
	t.Helper()
	op := d.operations()[method+" "+template]
	if op == nil {
		t.Fatalf("%s %s is not documented", method, template)
	}
	resp := d.deref(op["responses"].(map[string]any)[fmt.Sprint(r.Status)])
	if resp == nil {
		t.Fatalf("%s: status %d is not documented for %s %s; body %s", r.req, r.Status, method, template, r.Body)
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.Body) != 0 {
			t.Fatalf("%s: %d is documented without a body, got %s", r.req, r.Status, r.Body)
		}
		return
	}
	ct := r.Header.Get("Content-Type")
	for media, mt := range content {
		if !strings.HasPrefix(ct, media) {
			continue
		}
		if media != "application/json" {
			return
		}
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatalf("%s: body is not JSON: %v", r.req, err)
		}
		if problems := d.conform(mt.(map[string]any)["schema"], v, "body"); len(problems) > 0 {
			t.Fatalf("%s: the %d answer does not fit the documented schema:\n%s\nbody: %s", r.req, r.Status, strings.Join(problems, "\n"), r.Body)
		}
		return
	}
	t.Fatalf("%s: Content-Type %q, documented %v", r.req, ct, content)
}

// TestOpenAPIMatchesTheHandlers drives every operation through the real
// handler, with successes and the errors each documents, and checks each
// answer against the document.
func TestOpenAPIMatchesTheHandlers(t *testing.T) {
	d := loadOpenAPI(t)
	api, _, rec := newTestAPI(t, store.SQLite)
	seen := map[string]bool{}
	// call sends a request and checks the answer against the operation
	// named by method and template; it returns the answer.
	call := func(template string, status int, send func() *testResponse) *testResponse {
		t.Helper()
		r := send()
		method, _, _ := strings.Cut(r.req, " ")
		r.Want(status)
		d.checkResponse(t, method, template, r)
		seen[method+" "+template] = true
		return r
	}
	do := func(method, path string) func() *testResponse {
		return func() *testResponse { return api.Do(method, path, nil) }
	}
	js := func(method, path string, body any, header ...string) func() *testResponse {
		return func() *testResponse { return api.JSON(method, path, body, header...) }
	}
	up := func(method, path, field, doc string) func() *testResponse {
		return func() *testResponse { return api.Upload(method, path, field, doc) }
	}
	const (
		agents = "/api/v3/agents"
		ms     = "/api/v3/microservices"
		svcs   = "/api/v3/services"
	)
	big := strings.Repeat(" ", MaxBody+1)

	call("/healthz", 200, do("GET", "/healthz"))
	call("/readyz", 200, do("GET", "/readyz"))
	call("/metrics", 200, do("GET", "/metrics"))
	call("/", 302, do("GET", "/"))
	call("/console/{path}", 200, do("GET", "/console/"))
	page := call("/console/{path}", 200, do("GET", "/console/app.js"))
	call("/console/{path}", 304, func() *testResponse {
		return api.Do("GET", "/console/app.js", nil, "If-None-Match", page.Header.Get("ETag"))
	})
	call("/console/{path}", 404, do("GET", "/console/nothing.js"))
	doc := call("/openapi.json", 200, do("GET", "/openapi.json"))
	if string(doc.Body) != string(openAPIDocument) {
		t.Fatal("/openapi.json does not serve the embedded document")
	}

	// Agents.
	var hub createdAgent
	call(agents, 201, js("POST", agents, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})).Decode(&hub)
	var plant createdAgent
	call(agents, 201, js("POST", agents, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub"}, "tags": []string{"service.iofog.org/tag: checkout"}})).Decode(&plant)
	call(agents, 400, js("POST", agents, `{"name":`))
	call(agents, 409, js("POST", agents, map[string]any{"name": "hub"}))
	call(agents, 413, js("POST", agents, big))
	call(agents, 200, do("GET", agents))
	call(agents, 200, do("GET", agents+"?limit=1"))
	call(agents, 400, do("GET", agents+"?limit=0"))
	call(agents+"/yaml", 201, up("POST", agents+"/yaml", "agent", "kind: Agent\nmetadata:\n  name: sensor\nspec:\n  routerMode: none\n"))
	call(agents+"/yaml", 200, up("POST", agents+"/yaml", "agent", "kind: AgentConfig\nmetadata:\n  name: sensor\n  tags: [a]\nspec:\n  routerMode: none\n"))
	call(agents+"/yaml", 400, up("POST", agents+"/yaml", "agent", "kind: Service\n"))
	call(agents+"/yaml", 409, up("POST", agents+"/yaml", "agent", "kind: Agent\nmetadata:\n  name: core\nspec:\n  routerMode: interior\n  defaultRouter: true\n"))
	call(agents+"/yaml", 413, up("POST", agents+"/yaml", "agent", big))
	call(agents+"/{agent}", 200, do("GET", agents+"/plant-a"))
	call(agents+"/{agent}", 404, do("GET", agents+"/nope"))
	call(agents+"/{agent}", 200, js("PATCH", agents+"/plant-a", map[string]any{"host": "10.0.0.5"}))
	call(agents+"/{agent}", 400, js("PATCH", agents+"/plant-a", map[string]any{"routerMode": "hub"}))
	call(agents+"/{agent}", 404, js("PATCH", agents+"/nope", map[string]any{}))
	call(agents+"/{agent}", 409, js("PATCH", agents+"/sensor", map[string]any{"name": "hub"}))
	call(agents+"/{agent}", 413, js("PATCH", agents+"/plant-a", big))
	call(agents+"/{agent}/router", 200, do("GET", agents+"/plant-a/router"))
	call(agents+"/{agent}/router", 404, do("GET", agents+"/sensor/router"))
	call(agents+"/{agent}/token", 404, do("POST", agents+"/nope/token"))

	// Microservices.
	var m struct {
		UUID string `json:"uuid"`
	}
	call(ms, 201, js("POST", ms, map[string]any{"application": "orders", "name": "checkout", "agent": "plant-a"})).Decode(&m)
	call(ms, 400, js("POST", ms, map[string]any{"application": "orders", "name": "x"}))
	call(ms, 409, js("POST", ms, map[string]any{"application": "orders", "name": "checkout", "agent": "hub"}))
	call(ms, 413, js("POST", ms, big))
	call(ms, 200, do("GET", ms))
	call(ms, 400, do("GET", ms+"?continue=x"))
	call(ms+"/{uuid}", 200, do("GET", ms+"/"+m.UUID))
	call(ms+"/{uuid}", 404, do("GET", ms+"/nope"))
	call(ms+"/{uuid}", 200, js("PATCH", ms+"/"+m.UUID, map[string]any{"hostNetworkMode": true}))
	call(ms+"/{uuid}", 400, js("PATCH", ms+"/"+m.UUID, map[string]any{"agent": "nope"}))
	call(ms+"/{uuid}", 404, js("PATCH", ms+"/nope", map[string]any{}))
	call(ms+"/{uuid}", 413, js("PATCH", ms+"/"+m.UUID, big))
	call(ms, 200, do("GET", ms+"?application=orders"))
	call(ms, 200, do("GET", ms+"?application=nope"))

	// The ioFog controller's agent reads.
	call("/api/v3/iofog-list", 200, do("GET", "/api/v3/iofog-list?filters[0][key]=name&filters[0][value]=plant&filters[0][condition]=has"))
	call("/api/v3/iofog-list", 400, do("GET", "/api/v3/iofog-list?filters[0][key]=name"))
	call("/api/v3/iofog-list", 401, js("GET", "/api/v3/iofog-list", nil, noBearer...))
	call("/api/v3/iofog/{uuid}", 200, do("GET", "/api/v3/iofog/"+plant.UUID))
	call("/api/v3/iofog/{uuid}", 404, do("GET", "/api/v3/iofog/plant-a"))

	// The ioFog controller's writes, and the lists potctl reads beside
	// them.
	fog := "/api/v3/iofog/" + plant.UUID
	call("/api/v3/iofog/{uuid}", 204, js("PATCH", fog, map[string]any{"tags": []string{"service.iofog.org/tag: checkout"}, "location": "", "diskLimit": 50}))
	call("/api/v3/iofog/{uuid}", 200, js("PATCH", fog+"?dryRun=true", map[string]any{"host": "10.0.0.6", "upstreamRouters": []string{"default-router"}}))
	call("/api/v3/iofog/{uuid}", 400, js("PATCH", fog, map[string]any{"diskLimit": "big"}))
	call("/api/v3/iofog/{uuid}", 404, js("PATCH", "/api/v3/iofog/plant-a", map[string]any{}))
	call("/api/v3/iofog/{uuid}", 409, js("PATCH", fog, map[string]any{"name": "hub"}))
	call("/api/v3/iofog/{uuid}", 413, js("PATCH", fog, big))
	cartYAML := "kind: Microservice\nmetadata:\n  name: orders/cart\nspec:\n  agent:\n    name: plant-a\n"
	var cart struct {
		UUID string `json:"uuid"`
	}
	call(ms+"/yaml", 201, up("POST", ms+"/yaml", "microservice", cartYAML)).Decode(&cart)
	call(ms+"/yaml", 400, up("POST", ms+"/yaml", "microservice", "kind: Microservice\nmetadata:\n  name: a/b/c\nspec: {}\n"))
	call(ms+"/yaml", 409, up("POST", ms+"/yaml", "microservice", cartYAML))
	call(ms+"/yaml", 413, up("POST", ms+"/yaml", "microservice", big))
	movedCart := strings.Replace(cartYAML, "plant-a", "hub", 1)
	call(ms+"/yaml/{uuid}", 200, up("PATCH", ms+"/yaml/"+cart.UUID+"?dryRun=true", "microservice", movedCart))
	call(ms+"/yaml/{uuid}", 204, up("PATCH", ms+"/yaml/"+cart.UUID, "microservice", movedCart))
	call(ms+"/yaml/{uuid}", 400, up("PATCH", ms+"/yaml/"+cart.UUID, "microservice", strings.Replace(cartYAML, "plant-a", "nope", 1)))
	call(ms+"/yaml/{uuid}", 404, up("PATCH", ms+"/yaml/nope", "microservice", cartYAML))
	call(ms+"/yaml/{uuid}", 409, up("PATCH", ms+"/yaml/"+cart.UUID, "microservice", strings.Replace(cartYAML, "cart", "checkout", 1)))
	call(ms+"/yaml/{uuid}", 413, up("PATCH", ms+"/yaml/"+cart.UUID, "microservice", big))
	call(ms+"/system", 200, do("GET", ms+"/system"))
	call(ms+"/system", 404, do("GET", ms+"/system?application=orders"))
	call("/api/v3/application", 200, do("GET", "/api/v3/application"))
	call("/api/v3/application/system", 200, do("GET", "/api/v3/application/system"))
	call("/api/v3/routes", 200, do("GET", "/api/v3/routes"))
	call("/api/v3/volumeMounts", 200, do("GET", "/api/v3/volumeMounts"))
	var spare createdAgent
	call(agents, 201, js("POST", agents, map[string]any{"name": "spare", "routerMode": "none"})).Decode(&spare)
	call("/api/v3/iofog/{uuid}", 409, do("DELETE", fog))
	call("/api/v3/iofog/{uuid}", 202, do("DELETE", "/api/v3/iofog/"+spare.UUID))
	call("/api/v3/iofog/{uuid}", 404, do("DELETE", "/api/v3/iofog/"+spare.UUID))

	// Services.
	call(svcs, 201, js("POST", svcs, map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}}))
	call(svcs, 400, js("POST", svcs, map[string]any{"name": "x"}))
	call(svcs, 409, js("POST", svcs, map[string]any{"name": "checkout", "type": "external", "resource": "a.example.com", "targetPort": 1}))
	call(svcs, 413, js("POST", svcs, big))
	call(svcs+"/yaml", 201, up("POST", svcs+"/yaml", "service", "kind: Service\nmetadata:\n  name: vendor\nspec:\n  type: external\n  resource: 203.0.113.10\n  targetPort: 443\n"))
	call(svcs+"/yaml", 400, up("POST", svcs+"/yaml", "service", "kind: Agent\n"))
	call(svcs+"/yaml", 409, up("POST", svcs+"/yaml", "service", seedRemote))
	call(svcs+"/yaml", 413, up("POST", svcs+"/yaml", "service", big))
	call(svcs, 200, do("GET", svcs))
	call(svcs, 400, do("GET", svcs+"?limit=ten"))
	call(svcs+"/{name}", 200, do("GET", svcs+"/checkout"))
	call(svcs+"/{name}", 404, do("GET", svcs+"/nope"))
	call(svcs+"/{name}", 204, js("PATCH", svcs+"/checkout", map[string]any{"targetPort": 8081}))
	call(svcs+"/{name}", 200, js("PATCH", svcs+"/checkout?dryRun=true", map[string]any{"targetPort": 8082}))
	call(svcs, 201, js("POST", svcs+"?dryRun=true", map[string]any{"name": "dry", "type": "external", "resource": "a.example.com", "targetPort": 1, "tags": []string{"checkout"}}))
	call(svcs+"/{name}", 400, do("DELETE", svcs+"/checkout?dryRun=perhaps"))
	call(svcs+"/{name}", 400, js("PATCH", svcs+"/checkout", map[string]any{"type": "agent"}))
	call(svcs+"/{name}", 404, js("PATCH", svcs+"/nope", map[string]any{}))
	call(svcs+"/{name}", 413, js("PATCH", svcs+"/checkout", big))
	call(svcs+"/yaml/{name}", 204, up("PATCH", svcs+"/yaml/checkout", "service", seedRemote))
	call(svcs+"/yaml/{name}", 200, up("PATCH", svcs+"/yaml/checkout?dryRun=true", "service", seedRemote))
	call(svcs+"/yaml/{name}", 400, up("PATCH", svcs+"/yaml/checkout", "service", strings.Replace(seedRemote, "name: checkout", "name: other", 1)))
	call(svcs+"/yaml/{name}", 404, up("PATCH", svcs+"/yaml/nope", "service", strings.ReplaceAll(seedRemote, "name: checkout", "name: nope")))
	call(svcs+"/yaml/{name}", 413, up("PATCH", svcs+"/yaml/checkout", "service", big))
	call(svcs+"/{name}/distribution", 200, do("GET", svcs+"/checkout/distribution"))
	call(svcs+"/{name}/distribution", 200, do("GET", svcs+"/checkout/distribution?"+url.Values{"tags": {"checkout,a:b", "all"}}.Encode()))
	call(svcs+"/{name}/distribution", 404, do("GET", svcs+"/nope/distribution"))
	call(svcs+"/{name}/reconcile", 202, do("POST", svcs+"/checkout/reconcile"))
	call(svcs+"/{name}/events", 200, do("GET", svcs+"/checkout/events"))
	call(svcs+"/{name}/events", 404, do("GET", svcs+"/nope/events"))
	call(svcs+"/{name}/events", 400, do("GET", svcs+"/checkout/events?limit=0"))
	call("/api/v3/events", 200, do("GET", "/api/v3/events?limit=1"))
	call("/api/v3/events", 400, do("GET", "/api/v3/events?continue=x"))
	call("/api/v3/settings", 200, js("GET", "/api/v3/settings", nil, bearer(testTokens[auth.Viewer])...))
	call("/api/v3/settings", 400, do("GET", "/api/v3/settings?dryRun=true"))
	call("/api/v3/settings", 401, js("GET", "/api/v3/settings", nil, noBearer...))
	call("/api/v3/user/self", 200, js("GET", "/api/v3/user/self", nil, bearer(testTokens[auth.Viewer])...))
	call("/api/v3/user/self", 400, do("GET", "/api/v3/user/self?dryRun=true"))
	call("/api/v3/user/self", 401, js("GET", "/api/v3/user/self", nil, noBearer...))
	call(svcs+"/{name}/reconcile", 404, do("POST", svcs+"/nope/reconcile"))
	rec.FailWith(fmt.Errorf("connection refused"))
	call(svcs+"/{name}/reconcile", 503, do("POST", svcs+"/checkout/reconcile"))
	rec.FailWith(nil)
	call(agents+"/{agent}/services", 200, do("GET", agents+"/plant-a/services"))
	call(agents+"/{agent}/services", 404, do("GET", agents+"/nope/services"))

	// A user route without a token, and a role too weak for a write.
	call(svcs, 401, js("GET", svcs, nil, noBearer...))
	call(svcs+"/{name}", 403, js("DELETE", svcs+"/checkout", nil, bearer(testTokens[auth.Viewer])...))

	// The session calls of potctl and the Go SDK, without a bearer.
	call("/api/v3/status", 200, js("GET", "/api/v3/status", nil, noBearer...))
	call("/api/v3/user/refresh", 200, js("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": testTokens[auth.Viewer]}, noBearer...))
	call("/api/v3/user/refresh", 400, js("POST", "/api/v3/user/refresh", `{"refreshToken":`, noBearer...))
	call("/api/v3/user/refresh", 401, js("POST", "/api/v3/user/refresh", map[string]string{"refreshToken": "nope"}, noBearer...))
	call("/api/v3/user/login", 400, js("POST", "/api/v3/user/login", `[]`, noBearer...))
	call("/api/v3/user/login", 401, js("POST", "/api/v3/user/login", map[string]string{"email": "a@example.com", "password": "p"}, noBearer...))

	// The agent pull API.
	agent := bearer(plant.Token)
	call("/api/v3/agent/config/changes", 200, js("GET", "/api/v3/agent/config/changes", nil, agent...))
	call("/api/v3/agent/config/changes", 401, js("GET", "/api/v3/agent/config/changes", nil))
	call("/api/v3/agent/config/changes", 204, js("PATCH", "/api/v3/agent/config/changes", map[string]any{"lastUpdated": 0}, agent...))
	call("/api/v3/agent/config/changes", 400, js("PATCH", "/api/v3/agent/config/changes", map[string]any{}, agent...))
	call("/api/v3/agent/config/changes", 401, js("PATCH", "/api/v3/agent/config/changes", map[string]any{"lastUpdated": 0}))
	call("/api/v3/agent/config/changes", 413, js("PATCH", "/api/v3/agent/config/changes", big, agent...))
	call("/api/v3/agent/router", 200, js("GET", "/api/v3/agent/router", nil, agent...))
	call("/api/v3/agent/router", 401, js("GET", "/api/v3/agent/router", nil, bearer("nope")...))
	call("/api/v3/agent/router", 400, js("GET", "/api/v3/agent/router?timeoutSeconds=-1", nil, agent...))
	call("/api/v3/agent/router/status", 204, js("PUT", "/api/v3/agent/router/status", map[string]any{"version": `"1"`, "lastUpdated": 0}, agent...))
	call("/api/v3/agent/router/status", 400, js("PUT", "/api/v3/agent/router/status", map[string]any{"version": `"1"`, "failed": []any{map[string]any{"type": "router"}}}, agent...))
	call("/api/v3/agent/router/status", 401, js("PUT", "/api/v3/agent/router/status", map[string]any{"version": `"1"`}))
	call("/api/v3/agent/router/status", 413, js("PUT", "/api/v3/agent/router/status", strings.Repeat(" ", ReportMaxBody+1), agent...))
	call(agents+"/{agent}/token", 200, do("POST", agents+"/plant-a/token"))
	call("/api/v3/agent/router", 401, js("GET", "/api/v3/agent/router", nil, agent...)) // rotated away

	// Deletes, last: what is in use first.
	call(ms+"/{uuid}", 409, do("DELETE", ms+"/"+m.UUID))
	call(agents+"/{agent}", 409, do("DELETE", agents+"/plant-a"))
	call(svcs+"/{name}", 204, do("DELETE", svcs+"/checkout"))
	call(svcs+"/{name}", 404, do("DELETE", svcs+"/checkout"))
	call(ms+"/{uuid}", 204, do("DELETE", ms+"/"+m.UUID))
	call(ms+"/{uuid}", 404, do("DELETE", ms+"/"+m.UUID))
	call(agents+"/{agent}", 204, do("DELETE", agents+"/sensor"))
	call(agents+"/{agent}", 404, do("DELETE", agents+"/sensor"))

	// An unknown route answers the error envelope.
	if problems := d.conform(map[string]any{"$ref": "#/components/schemas/Error"}, api.Do("GET", "/api/v4", nil).Want(404).Map(), "body"); len(problems) > 0 {
		t.Fatalf("unknown route: %v", problems)
	}

	// Every documented operation was exercised.
	var missed []string
	for op := range d.operations() {
		if !seen[op] {
			missed = append(missed, op)
		}
	}
	if slices.Sort(missed); len(missed) > 0 {
		t.Fatalf("operations this test does not exercise: %v", missed)
	}
}
