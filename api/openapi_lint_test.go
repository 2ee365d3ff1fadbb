package api

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIPassesALinter validates the document with a real OpenAPI 3
// validator (kin-openapi: the structure, $refs, security requirements,
// and every example against its schema), as a generated client or a
// Postman import would read it; and checks what such a client needs to
// authenticate: bearer security for users and, separately, for agents,
// 401 on every protected route and 403 where a role can be refused.
func TestOpenAPIPassesALinter(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if len(doc.Servers) == 0 {
		t.Error("no servers")
	}
	for _, name := range []string{"userToken", "agentToken"} {
		s := doc.Components.SecuritySchemes[name]
		if s == nil || s.Value.Type != "http" || s.Value.Scheme != "bearer" {
			t.Errorf("security scheme %s: %+v", name, s)
		}
	}
	if len(doc.Security) != 1 || doc.Security[0]["userToken"] == nil {
		t.Errorf("the default security is %v, want userToken", doc.Security)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			security := doc.Security
			if op.Security != nil {
				security = *op.Security
			}
			if len(security) == 0 {
				continue // public: health, documents, the session calls
			}
			if op.Responses.Status(401) == nil {
				t.Errorf("%s is protected but documents no 401", where)
			}
			agent := security[0]["agentToken"] != nil
			if agent != strings.HasPrefix(path, "/api/v3/agent/") {
				t.Errorf("%s: security %v", where, security)
			}
			if !agent && method != "GET" && op.Responses.Status(403) == nil {
				t.Errorf("%s: a write a role may be refused documents no 403", where)
			}
		}
	}
}
