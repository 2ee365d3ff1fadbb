package importer

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"svcbridge/wire"
)

// needs are the plan's steps' needs, "kind/name: need, need".
func needs(p Plan) map[string]string {
	out := map[string]string{}
	p.each(func(kind string, h *Head) {
		var list []string
		for _, n := range h.Needs {
			s := n.String()
			if n.DefaultRouter {
				s += " (default router)"
			}
			list = append(list, s)
		}
		out[kind+"/"+h.Name] = strings.Join(list, ", ")
	})
	return out
}

func TestPlanNeeds(t *testing.T) {
	want := map[string]string{
		"agent/hub":                    "",
		"agent/core":                   "agent hub",
		"agent/plant":                  "agent hub, agent core",
		"microservice/orders/checkout": "agent plant",
		"service/billing":              "agent hub (default router)",
		"service/checkout":             "microservice orders/checkout, agent hub (default router)",
		"service/legacy":               "agent hub (default router)",
		// On a custom bridge: no hub.
		"service/ssh": "agent plant, agent core",
	}
	if got := needs(NewPlan(source(), Target{}, settings, Choices{})); !reflect.DeepEqual(got, want) {
		t.Errorf("into an empty svcbridge:\n%v\nwant\n%v", got, want)
	}

	// What svcbridge holds is needed by nothing; nor is a default router
	// when svcbridge has its own, or on the Kubernetes control plane.
	dst := Target{Agents: []wire.Agent{{UUID: coreUUID, Name: "core", Host: "core.example.com", RouterMode: "interior", DefaultRouter: true}}}
	got := needs(NewPlan(source(), dst, settings, Choices{}))
	if got["agent/plant"] != "agent hub" || got["service/billing"] != "" || got["service/ssh"] != "agent plant" {
		t.Errorf("beside svcbridge's core: %v", got)
	}
	k8s := settings
	k8s.ControlPlane = "kubernetes"
	if got := needs(NewPlan(source(), Target{}, k8s, Choices{})); got["service/billing"] != "" {
		t.Errorf("on Kubernetes, billing needs %s", got["service/billing"])
	}
}

func TestOutcomes(t *testing.T) {
	var o Outcomes
	edge5 := Need{Ref: Ref{KindAgent, "Edge_5"}, UUID: "e5"}
	sensor := Need{Ref: Ref{KindMicroservice, "orders/sensor"}, UUID: "m1"}
	hub := Need{Ref: Ref{KindAgent, "hub"}, UUID: "h"}
	if _, _, blocked := o.Blocker([]Need{hub, edge5}); blocked {
		t.Fatal("blocked before anything was refused")
	}
	o.NotImported(edge5.Ref, "agent Edge_5 was refused", false)
	// What needs the microservice on Edge_5 names Edge_5, the root.
	why, skipped, blocked := o.Blocker([]Need{hub, edge5})
	if !blocked || skipped || why != "agent Edge_5 was refused" {
		t.Fatalf("Blocker: %q %v %v", why, skipped, blocked)
	}
	o.NotImported(sensor.Ref, why, false)
	if why, _, _ := o.Blocker([]Need{sensor}); why != "agent Edge_5 was refused" {
		t.Errorf("through the microservice: %q", why)
	}
	o.NotImported(hub.Ref, "agent hub is skipped", true)
	if why, skipped, _ := o.Blocker([]Need{hub}); why != "agent hub is skipped" || !skipped {
		t.Errorf("skipped: %q %v", why, skipped)
	}
}

func TestPlanBlocksWhatNeedsAConflict(t *testing.T) {
	// svcbridge holds another agent named plant: what runs on the
	// source's plant is not imported, naming it.
	dst := Target{Agents: []wire.Agent{{UUID: "other", Name: "plant", RouterMode: "edge"}}}
	got := steps(NewPlan(source(), dst, settings, Choices{}))
	for _, line := range []string{
		"agent/plant conflict: svcbridge's agent plant has uuid other, the source's " + plantUUID,
		"microservice/orders/checkout blocked: agent plant is in conflict",
		"service/checkout blocked: agent plant is in conflict",
		"service/ssh blocked: agent plant is in conflict",
		"service/billing create",
	} {
		if !slices.Contains(got, line) {
			t.Errorf("no %q in\n%s", line, strings.Join(got, "\n"))
		}
	}
}

// The rules a dry run cannot apply while what an object refers to does
// not exist yet: svcbridge's own, among the agents the plan creates.
func TestPlanChecks(t *testing.T) {
	src := source()
	src.Agents = append(src.Agents, SourceAgent{UUID: "lab", Name: "lab", RouterMode: "none"},
		SourceAgent{UUID: "edge", Name: "edge", RouterMode: "edge"},
		SourceAgent{UUID: "below", Name: "below", RouterMode: "edge", UpstreamRouters: []string{"edge"}})
	p := NewPlan(src, Target{}, settings, Choices{})
	agent := func(name string) Agent {
		i := slices.IndexFunc(p.Agents, func(s Step[Agent]) bool { return s.Name == name })
		return p.Agents[i].Object
	}
	if err := p.CheckAgent(agent("plant")); err != nil {
		t.Errorf("plant: %v", err)
	}
	if err := p.CheckAgent(agent("below")); err == nil || err.Error() !=
		"Invalid upstream router 'edge': agent edge has routerMode edge, and only interior routers accept connections" {
		t.Errorf("below: %v", err)
	}

	svc := func(typ, resource, bridge string) Service {
		return Service{Name: "s", Type: typ, Resource: resource, TargetPort: 22, DefaultBridge: bridge}.WithDefaults()
	}
	for _, tc := range []struct {
		s    Service
		want string
	}{
		{svc("agent", plantUUID, ""), ""},
		{svc("microservice", msUUID, coreUUID), ""},
		{svc("agent", "lab", ""), "Agent lab has routerMode none: a TCP bridge service requires a router on the agent"},
		{svc("agent", "edge", coreUUID), "Invalid router connection, router core is not connected to edge"},
	} {
		got := ""
		if err := p.CheckService(tc.s); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s on %s: %q, want %q", tc.s.Type, tc.s.Resource, got, tc.want)
		}
	}

	// No system agent in the source, none in svcbridge: no default router.
	src.Agents[2].IsSystem = false
	if err := NewPlan(src, Target{}, settings, Choices{}).CheckService(svc("external", "x.example.com", "")); err == nil ||
		!strings.HasPrefix(err.Error(), "Default router not found") {
		t.Errorf("without a default router: %v", err)
	}
}

// The reference gives a new service the lowest port its services leave
// free (reference-controller.md §4). Moved ports come from the top of the
// range, so after the reference handed out its next port a second import
// keeps the new service's port and moves nothing again.
func TestPlanPortsAvoidTheReferencesNext(t *testing.T) {
	src := source()
	first := NewPlan(src, Target{}, settings, Choices{})
	dst := Target{Services: heldServices(first)}
	nextPort := func(src Source) int {
		for p := settings.BridgePorts.First; ; p++ {
			if !slices.ContainsFunc(src.Services, func(s wire.Service) bool { return s.BridgePort == p }) {
				return p
			}
		}
	}
	next := nextPort(src)
	src.Services = append(src.Services, wire.Service{Name: "audit", Type: "external", Resource: "audit.example.com", TargetPort: 514,
		DefaultBridge: "default-router", BridgePort: next})
	got := ports(NewPlan(src, dst, settings, Choices{}))
	want := map[string]string{
		"audit":    "create 10026->10026",
		"billing":  "unchanged 10024->10024",
		"checkout": "unchanged 10024->10030 (shared with billing)",
		"legacy":   "unchanged 9000->10029 (outside BRIDGE_PORTS_RANGE 10024-10030)",
		"ssh":      "unchanged 10025->10025",
	}
	if next != 10026 || !reflect.DeepEqual(got, want) {
		t.Errorf("the reference's next port %d; the second import:\n%v\nwant\n%v", next, got, want)
	}
}
