package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"svcbridge/store"
)

// A dry run runs the write's own transaction and rolls it back: it is
// refused by the same rules, answers what the write would (the bridgePort
// a create would get, the agents that would listen), stores nothing and
// starts no reconcile.
func TestDryRunWritesNothing(t *testing.T) {
	api, _, rec := newTestAPI(t, store.SQLite)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub"}, "tags": []string{"service.iofog.org/tag: checkout"}}).Want(201)
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "first", "type": "external", "resource": "203.0.113.1", "targetPort": 80}).Want(201)
	services, agents := len(rec.Services()), len(rec.Agents())
	dry := "?dryRun=true"

	// Create: the answer says what would be, nothing is.
	r := api.JSON("POST", "/api/v3/services"+dry, map[string]any{"name": "checkout", "type": "external", "resource": "203.0.113.2", "targetPort": 443, "tags": []string{"checkout"}}).Want(201)
	if r.Header.Get(DryRunHeader) != "true" {
		t.Errorf("a dry run's answer lacks %s", DryRunHeader)
	}
	var created struct {
		BridgePort   int    `json:"bridgePort"`
		Status       string `json:"provisioningStatus"`
		Distribution []struct {
			AgentName string `json:"agentName"`
			Reason    string `json:"reason"`
			Listening bool   `json:"listening"`
		} `json:"distribution"`
	}
	r.Decode(&created)
	var listeners []string
	for _, e := range created.Distribution {
		listeners = append(listeners, e.AgentName+":"+e.Reason)
	}
	if created.BridgePort != 10025 || strings.Join(listeners, ",") != "fog-a:service.iofog.org/tag: checkout,hub:hub" {
		t.Errorf("dry-run create: bridgePort %d, would listen %v", created.BridgePort, listeners)
	}
	api.Do("GET", "/api/v3/services/checkout", nil).Want(404)
	// The same rules: a duplicate is refused as the real create would be.
	api.JSON("POST", "/api/v3/services"+dry, map[string]any{"name": "first", "type": "external", "resource": "203.0.113.2", "targetPort": 443}).
		WantError(409, "DuplicatePropertyError", "Service with name first already exists")
	// The port was not taken: the real create gets the one promised.
	var real struct {
		BridgePort int `json:"bridgePort"`
	}
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "checkout", "type": "external", "resource": "203.0.113.2", "targetPort": 443, "tags": []string{"checkout"}}).Want(201).Decode(&real)
	if real.BridgePort != created.BridgePort {
		t.Errorf("the real create got bridgePort %d, the dry run said %d", real.BridgePort, created.BridgePort)
	}
	services++

	// Update: 200 with what it would make; the stored one is unchanged.
	var updated struct {
		TargetPort int `json:"targetPort"`
		Generation int `json:"generation"`
	}
	api.JSON("PATCH", "/api/v3/services/checkout"+dry, map[string]any{"targetPort": 8443}).Want(200).Decode(&updated)
	if updated.TargetPort != 8443 || updated.Generation != 2 {
		t.Errorf("dry-run update answered targetPort %d generation %d", updated.TargetPort, updated.Generation)
	}
	api.Upload("PATCH", "/api/v3/services/yaml/checkout"+dry, "service", "kind: Service\nmetadata:\n  name: checkout\nspec:\n  type: external\n  resource: 203.0.113.2\n  targetPort: 9000\n").Want(200)
	api.JSON("PATCH", "/api/v3/services/checkout"+dry, map[string]any{"type": "agent"}).Want(400)
	if got := api.Do("GET", "/api/v3/services/checkout", nil).Want(200).Map(); got["targetPort"] != float64(443) || got["generation"] != float64(1) {
		t.Errorf("after dry-run updates: %v", got)
	}

	// Deletes and the rest: answered, not done.
	api.Do("DELETE", "/api/v3/services/checkout"+dry, nil).Want(204)
	api.Do("GET", "/api/v3/services/checkout", nil).Want(200)
	api.Do("POST", "/api/v3/services/checkout/reconcile"+dry, nil).Want(202)
	api.JSON("POST", "/api/v3/agents"+dry, map[string]any{"name": "fog-b"}).Want(201)
	api.Do("GET", "/api/v3/agents/fog-b", nil).Want(404)
	api.Do("DELETE", "/api/v3/agents/fog-a"+dry, nil).Want(204)
	api.Do("GET", "/api/v3/agents/fog-a", nil).Want(200)
	api.JSON("POST", "/api/v3/microservices"+dry, map[string]any{"application": "orders", "name": "m", "agent": "fog-a"}).Want(201)
	if list := api.Do("GET", "/api/v3/microservices", nil).Want(200); string(list.Body) != `{"microservices":[]}` {
		t.Errorf("a dry-run microservice was stored: %s", list.Body)
	}
	if len(rec.Services()) != services || len(rec.Agents()) != agents {
		t.Errorf("dry runs started reconciles: services %v", rec.Services())
	}
	api.Do("DELETE", "/api/v3/services/checkout?dryRun=maybe", nil).WantError(400, "ValidationError", "Query parameter 'dryRun' must be true or false")
	api.Do("DELETE", "/api/v3/services/checkout?dryRun=false", nil).Want(204)
	api.Do("GET", "/api/v3/services/checkout", nil).Want(404)
}

// TestDryRunCreatesSayThePortIsNoReservation (issue 54): a dry run of
// several new services (apply --dry-run sends each document alone) answers
// each the first free port, the same one; each answer warns that the port
// is assigned on create, so that a preview of many does not promise one
// port to all. A requested port, which the create would claim, and a real
// create warn of nothing.
func TestDryRunCreatesSayThePortIsNoReservation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
		body := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "external", "resource": "203.0.113.2", "targetPort": 443}
		}
		for _, name := range []string{"a", "b", "c"} {
			var v struct{ BridgePort int }
			r := api.JSON("POST", "/api/v3/services?dryRun=true", body(name)).Want(201).Decode(&v)
			want := fmt.Sprintf(`299 - "service %s: bridgePort 10024 is the first free port now, not a reservation: ports are assigned on create, `+
				`so a service created before it (another new service of the same apply too) takes it first"`, name)
			if w := r.Header.Values("Warning"); v.BridgePort != 10024 || !slices.Equal(w, []string{want}) {
				t.Errorf("dry-run create of %s: bridgePort %d, warned %q; want 10024, %q", name, v.BridgePort, w, want)
			}
		}
		for _, r := range []*testResponse{
			api.JSON("POST", "/api/v3/services?dryRun=true&bridgePort=10030", body("d")).Want(201),
			api.JSON("POST", "/api/v3/services", body("e")).Want(201),
		} {
			if w := r.Header.Values("Warning"); len(w) != 0 {
				t.Errorf("%s warned %q", r.req, w)
			}
		}
	})
}
