package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"svcbridge/service"
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
			wantAgentChangeWarns(t, api, "fog-a", map[string]any{"upstreamRouters": []string{"hub"}},
				"kind: Agent\nmetadata:\n  name: fog-a\nspec:\n  upstreamRouters: [hub]\n", want)
		})
	}
}

// wantAgentChangeWarns makes change to agent as a dry-run JSON PATCH, the
// same change as doc, a dry-run YAML upload, then as the JSON PATCH, and
// fails unless each answer warns of want("would"), want("would") and
// want("will").
func wantAgentChangeWarns(t *testing.T, api *testAPI, agent string, change map[string]any, doc string, want func(verb string) []string) {
	t.Helper()
	for _, step := range []struct {
		what, verb string
		send       func() *testResponse
	}{
		{"dry run", "would", func() *testResponse { return api.JSON("PATCH", "/api/v3/agents/"+agent+"?dryRun=true", change) }},
		{"dry-run YAML upload", "would", func() *testResponse { return api.Upload("POST", "/api/v3/agents/yaml?dryRun=true", "agent", doc) }},
		{"the write", "will", func() *testResponse { return api.JSON("PATCH", "/api/v3/agents/"+agent, change) }},
	} {
		if w := step.send().Want(200).Header.Values("Warning"); !slices.Equal(w, want(step.verb)) {
			t.Errorf("%s warned %q, want %q", step.what, w, want(step.verb))
		}
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

// TestHubHostRemovedWarnsAndShows (issue 54): removing the hub agent's
// host, where the hub's host is every service's endpoint, leaves them
// placed but unreachable: the change (and its dry run, a YAML upload's
// too) warns of each service by name, and a service without an endpoint
// never reads as plainly ready: its provisioningMessage says why, in the
// list and the single GET. A service whose hub is another agent, with a
// host, is neither warned of nor marked.
func TestHubHostRemovedWarnsAndShows(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "core", "routerMode": "interior", "host": "core.example.com", "upstreamRouters": []string{"hub"}}).Want(201)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub", "core"}}).Want(201)
		hubbed := []string{"checkout", "db", "ssh", "vendor"}
		for i, name := range hubbed {
			body := map[string]any{"name": name, "type": "agent", "resource": "fog-a", "targetPort": 8080 + i}
			if i%2 == 1 {
				body = map[string]any{"name": name, "type": "external", "resource": "203.0.113.10", "targetPort": 8080 + i}
			}
			api.JSON("POST", "/api/v3/services", body).Want(201)
		}
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "bridged", "type": "agent", "resource": "fog-a", "targetPort": 22, "defaultBridge": "core"}).Want(201)

		want := func(verb string) []string {
			var out []string
			for _, name := range hubbed {
				out = append(out, fmt.Sprintf(`299 - "service %s %s lose its endpoint: its hub agent hub has no host, so clients have no address to reach it at"`, name, verb))
			}
			return out
		}
		wantAgentChangeWarns(t, api, "hub", map[string]any{"host": ""},
			"kind: Agent\nmetadata:\n  name: hub\nspec:\n  routerMode: interior\n  defaultRouter: true\n", want)
		// Once it has none, a change has none to take: no warning.
		r := api.JSON("PATCH", "/api/v3/agents/hub", map[string]any{"host": ""}).Want(200)
		if w := r.Header.Values("Warning"); len(w) != 0 {
			t.Errorf("an unchanged host warned %q", w)
		}

		// The worker's passes: each is ready, as its objects are in place,
		// with the endpoint Place gave it, the hub's host: none.
		for _, name := range append(hubbed, "bridged") {
			endpoint := ""
			if name == "bridged" {
				endpoint = "core.example.com"
			}
			setStatus(t, st, name, 1, service.StatusReady, nil, &endpoint)
		}
		var list []struct {
			Name, ProvisioningStatus, ProvisioningMessage string
		}
		api.Do("GET", "/api/v3/services", nil).Want(200).Decode(&list)
		note := "no endpoint: its hub agent hub has no host, so clients have no address to reach it at"
		for _, s := range list {
			wantNote := note
			if s.Name == "bridged" {
				wantNote = ""
			}
			if s.ProvisioningStatus != service.StatusReady || s.ProvisioningMessage != wantNote {
				t.Errorf("listed %s: %s, provisioningMessage %q; want ready, %q", s.Name, s.ProvisioningStatus, s.ProvisioningMessage, wantNote)
			}
		}
		if got := api.Do("GET", "/api/v3/services/db", nil).Want(200).Map()["provisioningMessage"]; got != note {
			t.Errorf("GET db: provisioningMessage %v, want %q", got, note)
		}
	})
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
		{"real write", []breakage{{Service: "a", Reason: "gone"}}, false, []string{`299 - "service a will fail: gone"`}},
		{"quoted", []breakage{{Service: "a", Reason: `router "x\y"` + "\nnext"}}, true, []string{`299 - "service a would fail: router \"x\\y\" next"`}},
		{"endpoint lost", []breakage{{Service: "a", Reason: "no host", LosesEndpoint: true}}, true, []string{`299 - "service a would lose its endpoint: no host"`}},
	} {
		if got := warningValues(tc.broken, tc.dryRun); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	got := warningValues(many, true)
	if len(got) != maxWarnings+1 || got[maxWarnings] != `299 - "and 3 more services would fail"` || !strings.Contains(got[0], "service s0 would fail") {
		t.Errorf("capped: %d values, last %q", len(got), got[len(got)-1])
	}
	// The rest are told as what befalls them.
	for rest, want := range map[string]string{"lll": "lose their endpoint", "flf": "fail or lose their endpoint"} {
		for i, c := range rest {
			many[maxWarnings+i].LosesEndpoint = c == 'l'
		}
		if got := warningValues(many, false); got[maxWarnings] != `299 - "and 3 more services will `+want+`"` {
			t.Errorf("capped, the rest %s: last %q", rest, got[maxWarnings])
		}
	}
}
