package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"svcbridge/store/storetest"
)

// An agent change that breaks a service's placement is answered with a
// Warning naming the service and why, the same in a dry run ("would") as
// in the real write ("will"); a harmless change warns of nothing.
func TestAgentChangeWarnsOfBrokenServices(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			api, _, _ := newTestAPI(t, dialect)
			api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
			api.JSON("POST", "/api/v3/agents", map[string]any{"name": "core", "routerMode": "interior", "host": "core.example.com", "upstreamRouters": []string{"hub"}}).Want(201)
			api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub", "core"}}).Want(201)
			api.JSON("POST", "/api/v3/services", map[string]any{"name": "ssh", "type": "agent", "resource": "fog-a", "targetPort": 22, "defaultBridge": "core"}).Want(201)
			api.JSON("POST", "/api/v3/services", map[string]any{"name": "web", "type": "agent", "resource": "fog-a", "targetPort": 80}).Want(201)

			// Harmless: fog-a keeps core.
			r := api.JSON("PATCH", "/api/v3/agents/fog-a?dryRun=true", map[string]any{"upstreamRouters": []string{"core", "hub"}}).Want(200)
			if w := r.Header.Values("Warning"); len(w) != 0 {
				t.Errorf("a harmless change warned %q", w)
			}

			want := func(verb string) []string {
				return []string{fmt.Sprintf(`299 - "service ssh %s fail: Invalid router connection, router core is not connected to fog-a"`, verb)}
			}
			rewire := map[string]any{"upstreamRouters": []string{"hub"}}
			r = api.JSON("PATCH", "/api/v3/agents/fog-a?dryRun=true", rewire).Want(200)
			if w := r.Header.Values("Warning"); !slices.Equal(w, want("would")) {
				t.Errorf("dry run warned %q, want %q", w, want("would"))
			}
			doc := "kind: Agent\nmetadata:\n  name: fog-a\nspec:\n  upstreamRouters: [hub]\n"
			r = api.Upload("POST", "/api/v3/agents/yaml?dryRun=true", "agent", doc).Want(200)
			if w := r.Header.Values("Warning"); !slices.Equal(w, want("would")) {
				t.Errorf("dry-run YAML upload warned %q, want %q", w, want("would"))
			}
			r = api.JSON("PATCH", "/api/v3/agents/fog-a", rewire).Want(200)
			if w := r.Header.Values("Warning"); !slices.Equal(w, want("will")) {
				t.Errorf("the write warned %q, want %q", w, want("will"))
			}
		})
	}
}

// A microservice moved to an agent without a router warns of the services
// on it.
func TestMicroserviceMoveWarnsOfBrokenServices(t *testing.T) {
	api, _, _ := newTestAPI(t, storetest.Dialects[0])
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub"}}).Want(201)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "bare", "routerMode": "none"}).Want(201)
	var ms struct{ UUID string }
	api.JSON("POST", "/api/v3/microservices", map[string]any{"name": "checkout", "application": "orders", "agent": "fog-a"}).Want(201).Decode(&ms)
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}).Want(201)

	r := api.JSON("PATCH", "/api/v3/microservices/"+ms.UUID+"?dryRun=true", map[string]any{"agent": "bare"}).Want(200)
	want := `299 - "service checkout would fail: Agent bare has routerMode none: a TCP bridge service requires a router on the agent"`
	if w := r.Header.Values("Warning"); !slices.Equal(w, []string{want}) {
		t.Errorf("warned %q, want %q", w, want)
	}
}

func TestWarningValues(t *testing.T) {
	many := make([]breakage, maxWarnings+3)
	for i := range many {
		many[i] = breakage{Service: fmt.Sprint("s", i), Reason: "r"}
	}
	for _, tc := range []struct {
		name   string
		broken []breakage
		dryRun bool
		want   []string
	}{
		{"none", nil, true, nil},
		{"real write", []breakage{{"a", "gone"}}, false, []string{`299 - "service a will fail: gone"`}},
		{"quoted", []breakage{{"a", `router "x\y"` + "\nnext"}}, true, []string{`299 - "service a would fail: router \"x\\y\" next"`}},
	} {
		if got := warningValues(tc.broken, tc.dryRun); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	got := warningValues(many, true)
	if len(got) != maxWarnings+1 || got[maxWarnings] != `299 - "and 3 more services would fail"` || !strings.Contains(got[0], "service s0 would fail") {
		t.Errorf("capped: %d values, last %q", len(got), got[len(got)-1])
	}
}
