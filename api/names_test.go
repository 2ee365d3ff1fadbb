package api

import (
	"net/http"
	"slices"
	"testing"
)

// TestAnswersNameWhatTheyReferTo: beside the uuids the store keeps (and
// the reference's clients read), every answer names the agents and
// microservices it refers to as people write them, in a single answer, a
// list and a write's answer alike.
func TestAnswersNameWhatTheyReferTo(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		f := newInventory(t, p.remote)
		type named struct {
			Name, Resource, ResourceName, DefaultBridge, DefaultBridgeName string
			Placement                                                      struct{ ConnectorAgent, ConnectorAgentName, HubAgent, HubAgentName string }
		}
		var created named
		p.remote.JSON(http.MethodPost, servicesPath, map[string]any{"name": "ssh", "type": "agent", "resource": f.plantA.UUID, "targetPort": 22, "defaultBridge": f.core.UUID}).
			Want(http.StatusCreated).Decode(&created)
		p.remote.JSON(http.MethodPost, servicesPath, map[string]any{"name": "till", "type": "microservice", "resource": f.checkout.UUID, "targetPort": 80}).Want(http.StatusCreated)
		p.remote.JSON(http.MethodPost, servicesPath, map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}).Want(http.StatusCreated)

		var one named
		p.remote.Do(http.MethodGet, servicesPath+"/ssh", nil).Want(http.StatusOK).Decode(&one)
		var list []named
		p.remote.Do(http.MethodGet, servicesPath, nil).Want(http.StatusOK).Decode(&list)
		want := map[string][2]string{"ssh": {"plant-a", "core"}, "till": {"orders/checkout", "default-router"}, "vendor": {"203.0.113.10", "default-router"}}
		for _, s := range append([]named{created, one}, list...) {
			if w := want[s.Name]; s.ResourceName != w[0] || s.DefaultBridgeName != w[1] {
				t.Errorf("service %s names resource %q and bridge %q, want %q and %q", s.Name, s.ResourceName, s.DefaultBridgeName, w[0], w[1])
			}
		}
		if one.Resource != f.plantA.UUID || one.DefaultBridge != f.core.UUID {
			t.Errorf("ssh's resource %s and defaultBridge %s, want the uuids the reference answers", one.Resource, one.DefaultBridge)
		}
		for what, s := range map[string]named{"create's answer": created, "GET": one} {
			if pl := s.Placement; pl.ConnectorAgent != f.plantA.UUID || pl.ConnectorAgentName != "plant-a" || pl.HubAgent != f.core.UUID || pl.HubAgentName != "core" {
				t.Errorf("ssh's placement in its %s %+v, want plant-a and core by uuid and name", what, pl)
			}
		}

		type agent struct {
			Name                string
			UpstreamRouters     []string
			UpstreamRouterNames []string
			Links               []string
		}
		var a agent
		p.remote.Do(http.MethodGet, "/api/v3/agents/plant-a", nil).Want(http.StatusOK).Decode(&a)
		var agents []agent
		p.remote.Do(http.MethodGet, "/api/v3/agents", nil).Want(http.StatusOK).Decode(&agents)
		for _, a := range append(agents, a) {
			want := map[string][]string{"plant-a": {"hub", "core"}, "plant-b": {"hub"}}[a.Name]
			if len(a.UpstreamRouters) != len(want) || !slices.Equal(a.UpstreamRouterNames, want) {
				t.Errorf("agent %s: upstreamRouters %v named %v, want %v", a.Name, a.UpstreamRouters, a.UpstreamRouterNames, want)
			}
			// What its router links to, so that a picture of the network
			// need not know the rule: an agent listing no upstream routers
			// links to the default router, which links to nothing.
			links := map[string][]string{"plant-a": {f.hub.UUID, f.core.UUID}, "plant-b": {f.hub.UUID}, "core": {f.hub.UUID}, "hub": {}, "sensor": {}}[a.Name]
			if a.Links == nil || !slices.Equal(a.Links, links) {
				t.Errorf("agent %s links to %v, want %v", a.Name, a.Links, links)
			}
		}
		var patched agent
		p.remote.JSON(http.MethodPatch, "/api/v3/agents/plant-b", map[string]any{"upstreamRouters": []string{f.core.UUID, "hub"}}).Want(http.StatusOK).Decode(&patched)
		if want := []string{"core", "hub"}; !slices.Equal(patched.UpstreamRouterNames, want) || !slices.Equal(patched.UpstreamRouters, []string{f.core.UUID, f.hub.UUID}) {
			t.Errorf("PATCH's answer: upstreamRouters %v named %v, want core and hub", patched.UpstreamRouters, patched.UpstreamRouterNames)
		}

		type ms struct{ Name, Agent, AgentName, IofogUUID string }
		var m ms
		p.remote.Do(http.MethodGet, "/api/v3/microservices/"+f.checkout.UUID, nil).Want(http.StatusOK).Decode(&m)
		var mlist struct{ Microservices []ms }
		p.remote.Do(http.MethodGet, "/api/v3/microservices", nil).Want(http.StatusOK).Decode(&mlist)
		for _, m := range append(mlist.Microservices, m) {
			want := map[string]string{"checkout": "plant-a", "checkout-v2": "plant-b", "till": "sensor"}[m.Name]
			if m.AgentName != want || m.Agent == want {
				t.Errorf("microservice %s: agent %s named %q, want its uuid named %q", m.Name, m.Agent, m.AgentName, want)
			}
		}
	})
}
