package api

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

func TestUnknownParams(t *testing.T) {
	list := []queryParam{{Name: "limit"}, {Name: "continue"}}
	filters := []queryParam{{Name: "filters", Style: "deepObject"}}
	for _, tc := range []struct {
		name     string
		accepted []queryParam
		query    string
		want     []string
	}{
		{"none sent", list, "", nil},
		{"declared", list, "limit=1&continue=x", nil},
		{"unknown", list, "limit=1&offset=10", []string{"offset"}},
		{"several, sorted", list, "z=1&a=2&limit=1", []string{"a", "z"}},
		{"empty value is still sent", list, "offset=", []string{"offset"}},
		{"route without parameters", nil, "limit=1", []string{"limit"}},
		{"names are case-sensitive", list, "Limit=1", []string{"Limit"}},
		{"deepObject members", filters, "filters[0][key]=a&filters[0][value]=b", nil},
		// filters alone reaches the handler, which names its shape.
		{"deepObject bare name", filters, "filters=a", nil},
		{"deepObject prefix only", filters, "filtersX=a&system=true", []string{"filtersX", "system"}},
		{"plain parameter has no members", list, "limit[0]=1", []string{"limit[0]"}},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := unknownParams(tc.accepted, q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: unknownParams(%q) = %q, want %q", tc.name, tc.query, got, tc.want)
		}
	}
}

// TestRouteParamsAreTheDocuments checks the declarations read from
// openapi.json against the routes whose parameters clients send.
func TestRouteParamsAreTheDocuments(t *testing.T) {
	names := func(route string) []string {
		var out []string
		for _, p := range routeParams[route] {
			out = append(out, p.Name)
		}
		return out
	}
	for route, want := range map[string][]string{
		"GET /api/v3/services":                    {"limit", "continue", "watch"},
		"GET /api/v3/microservices":               {"application", "name", "limit", "continue", "watch"},
		"GET /api/v3/events":                      {"limit", "continue"},
		"GET /api/v3/services/:name/distribution": {"tags"},
		"GET /api/v3/iofog-list":                  {"filters", "system"},
		"PATCH /api/v3/services/yaml/:name":       {"dryRun"},
		"DELETE /api/v3/microservices/:uuid":      {"dryRun"},
		"GET /api/v3/agents/:agent":               nil,
	} {
		if got := names(route); !slices.Equal(got, want) {
			t.Errorf("%s takes %q, want %q", route, got, want)
		}
	}
}

// TestUnknownQueryParametersAreRefused: a parameter the route does not
// take is a 400 naming it, before anything is written; the agents' pull
// API is not checked (agents in the field are not refused for it).
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, rec := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})

		api.Do("GET", "/api/v3/services?offset=10", nil).WantError(400, "ValidationError",
			"Unknown query parameter offset (this route takes limit, continue, watch)")
		api.Do("GET", "/api/v3/agents/hub?b=1&a=", nil).WantError(400, "ValidationError",
			"Unknown query parameters a, b (this route takes none)")
		api.Do("GET", "/api/v3/agents/hub?dryRun=true", nil).WantError(400, "ValidationError",
			"Unknown query parameter dryRun (this route takes none)")
		api.Do("GET", "/api/v3/iofog-list?filters[0][key]=name&filters[0][value]=hub&filters[0][condition]=equals&offset=1", nil).
			WantError(400, "ValidationError", "Unknown query parameter offset (this route takes filters, system)")

		// Nothing is written.
		api.JSON("POST", "/api/v3/services?replicas=2", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}).
			WantError(400, "ValidationError", "Unknown query parameter replicas (this route takes dryRun, bridgePort)")
		api.Do("GET", "/api/v3/services/vendor", nil).Want(http.StatusNotFound)
		if len(rec.services) != 0 {
			t.Errorf("reconciles %v after a refused create", rec.services)
		}

		// A pair Go's URL parsing drops, and a parameter given twice,
		// would be answered as if they were not there.
		api.Do("GET", "/api/v3/services?limit=1;watch=true", nil).WantError(400, "ValidationError",
			"Malformed query string: invalid semicolon separator in query (separate parameters with &)")
		api.Do("GET", "/api/v3/services?limit=1&limit=2", nil).WantError(400, "ValidationError",
			"Query parameter 'limit' is given 2 times; give it once")
		// A list parameter adds up.
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 80}).Want(http.StatusCreated)
		api.Do("GET", "/api/v3/services/web/distribution?tags=a&tags=b", nil).Want(http.StatusOK)

		// Declared parameters still pass, as do the pull API's.
		api.Do("GET", "/api/v3/services?limit=1", nil).Want(http.StatusOK)
		api.Do("GET", "/api/v3/iofog-list?filters[0][key]=name&filters[0][value]=hub&filters[0][condition]=equals", nil).Want(http.StatusOK)
		api.Do("GET", "/api/v3/agent/router?since=1", nil, bearer(hub.Token)...).Want(http.StatusOK)
	})
}
