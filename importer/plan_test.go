package importer

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"svcbridge/wire"
)

const (
	hubUUID   = "11111111-1111-1111-1111-111111111111"
	coreUUID  = "22222222-2222-2222-2222-222222222222"
	plantUUID = "33333333-3333-3333-3333-333333333333"
	msUUID    = "44444444-4444-4444-4444-444444444444"
)

var settings = Settings{TagPrefix: "service.iofog.org/tag", BridgePorts: Ports{First: 10024, Last: 10030}}

// source is a reference controller's state: the system agent hub, an
// interior core, an edge plant below both, a microservice on plant, and
// services of which two share 10024 and one is outside the range.
func source() Source {
	return Source{
		Agents: []SourceAgent{
			{UUID: plantUUID, Name: "plant", Host: "10.0.0.5", RouterMode: "edge", UpstreamRouters: []string{"default-router", coreUUID},
				Tags: []string{"service.datasance.com/tag: checkout", "site: a"}},
			{UUID: coreUUID, Name: "core", Host: "core.example.com", RouterMode: "interior", UpstreamRouters: []string{"default-router"}},
			{UUID: hubUUID, Name: "hub", Host: "hub.example.com", RouterMode: "interior", IsSystem: true, Tags: []string{}},
		},
		Microservices: []SourceMicroservice{{UUID: msUUID, Name: "checkout", Application: "orders", AgentUUID: plantUUID}},
		Services: []wire.Service{
			{Name: "checkout", Type: "microservice", Resource: msUUID, TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10024, Tags: []string{"checkout"}},
			{Name: "billing", Type: "external", Resource: "billing.example.com", TargetPort: 443, DefaultBridge: "default-router", BridgePort: 10024},
			{Name: "legacy", Type: "external", Resource: "legacy.example.com", TargetPort: 22, DefaultBridge: "default-router", BridgePort: 9000},
			{Name: "ssh", Type: "agent", Resource: plantUUID, TargetPort: 22, DefaultBridge: coreUUID, BridgePort: 10025},
		},
	}
}

func TestMapTag(t *testing.T) {
	for _, tc := range []struct{ tag, prefix, want string }{
		{"service.datasance.com/tag: checkout", "service.iofog.org/tag", "service.iofog.org/tag: checkout"},
		{"service.datasance.com/tag: all", "example.com/svc", "example.com/svc: all"},
		{"service.datasance.com/tag:checkout", "service.iofog.org/tag", "service.iofog.org/tag:checkout"},
		{"service.datasance.com/tag: checkout", SourceTagPrefix, "service.datasance.com/tag: checkout"},
		{"service.datasance.com/tagX: y", "service.iofog.org/tag", "service.datasance.com/tagX: y"},
		{"service.datasance.com/tag", "service.iofog.org/tag", "service.datasance.com/tag"},
		{"site: a", "service.iofog.org/tag", "site: a"},
	} {
		if got := MapTag(tc.tag, tc.prefix); got != tc.want {
			t.Errorf("MapTag(%q, %q) = %q, want %q", tc.tag, tc.prefix, got, tc.want)
		}
	}
}

func TestParsePorts(t *testing.T) {
	for s, want := range map[string]Ports{"10024-65535": {10024, 65535}, " 1 - 2 ": {1, 2}, "5-5": {5, 5}} {
		if got, err := ParsePorts(s); err != nil || got != want {
			t.Errorf("ParsePorts(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "20000", "2-1", "0-5", "1-65536", "a-b"} {
		if _, err := ParsePorts(s); err == nil {
			t.Errorf("ParsePorts(%q) accepted", s)
		}
	}
}

// ports is the plan's services as name → action and port line.
func ports(p Plan) map[string]string {
	out := map[string]string{}
	for _, s := range p.Services {
		line := string(s.Action)
		if s.Port != nil {
			line += " " + strconv.Itoa(s.Port.Source) + "->" + strconv.Itoa(s.Port.Port)
			if s.Port.Reason != "" {
				line += " (" + s.Port.Reason + ")"
			}
		}
		if s.Reason != "" {
			line += ": " + s.Reason
		}
		out[s.Name] = line
	}
	return out
}

func TestPlanPorts(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  Target
		want map[string]string
	}{
		// Moved ports come from the top of the range down.
		{"into an empty svcbridge", Target{}, map[string]string{
			"billing":  "create 10024->10024",
			"checkout": "create 10024->10030 (shared with billing)",
			"legacy":   "create 9000->10029 (outside BRIDGE_PORTS_RANGE 10024-10030)",
			"ssh":      "create 10025->10025",
		}},
		{"beside svcbridge's own services", Target{Services: []wire.Service{
			{Name: "mine", Type: "external", Resource: "m.example.com", TargetPort: 1, DefaultBridge: "default-router", BridgePort: 10025},
			{Name: "other", Type: "external", Resource: "o.example.com", TargetPort: 1, DefaultBridge: "default-router", BridgePort: 10026},
		}}, map[string]string{
			"billing":  "create 10024->10024",
			"checkout": "create 10024->10030 (shared with billing)",
			"legacy":   "create 9000->10029 (outside BRIDGE_PORTS_RANGE 10024-10030)",
			"ssh":      "create 10025->10028 (taken in svcbridge by mine)",
		}},
		// An import by an earlier svcbridge, which moved ports up from the
		// bottom: what svcbridge holds stays.
		{"again after the import", Target{Services: []wire.Service{
			{Name: "billing", Type: "external", Resource: "billing.example.com", TargetPort: 443, DefaultBridge: "default-router", BridgePort: 10024, Tags: []string{}},
			{Name: "checkout", Type: "microservice", Resource: msUUID, TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10026, Tags: []string{"checkout"}},
			{Name: "legacy", Type: "external", Resource: "legacy.example.com", TargetPort: 22, DefaultBridge: "default-router", BridgePort: 10027},
			{Name: "ssh", Type: "agent", Resource: plantUUID, TargetPort: 22, DefaultBridge: coreUUID, BridgePort: 10025},
		}}, map[string]string{
			"billing":  "unchanged 10024->10024",
			"checkout": "unchanged 10024->10026 (shared with billing)",
			"legacy":   "unchanged 9000->10027 (outside BRIDGE_PORTS_RANGE 10024-10030)",
			"ssh":      "unchanged 10025->10025",
		}},
		{"svcbridge holds one of the sharers on the port", Target{Services: []wire.Service{
			{Name: "checkout", Type: "microservice", Resource: msUUID, TargetPort: 8080, DefaultBridge: "default-router", BridgePort: 10024, Tags: []string{"checkout"}},
		}}, map[string]string{
			"billing":  "create 10024->10030 (shared with checkout)",
			"checkout": "unchanged 10024->10024",
			"legacy":   "create 9000->10029 (outside BRIDGE_PORTS_RANGE 10024-10030)",
			"ssh":      "create 10025->10025",
		}},
		{"a differing service and a full range", Target{Services: []wire.Service{
			{Name: "checkout", Type: "microservice", Resource: msUUID, TargetPort: 9090, DefaultBridge: "default-router", BridgePort: 10030, Tags: []string{"checkout"}},
			{Name: "a", BridgePort: 10026}, {Name: "b", BridgePort: 10027}, {Name: "c", BridgePort: 10028}, {Name: "d", BridgePort: 10029},
		}}, map[string]string{
			"billing":  "create 10024->10024",
			"checkout": `conflict: svcbridge holds it with targetPort "9090", the source with "8080"`,
			"legacy":   "conflict: its bridgePort 9000 must move (outside BRIDGE_PORTS_RANGE 10024-10030) and no port of BRIDGE_PORTS_RANGE 10024-10030 is free",
			"ssh":      "create 10025->10025",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ports(NewPlan(source(), tc.dst, settings, Choices{}))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("services:\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// agents is the plan's agents as "name action" lines, in plan order.
func agents(p Plan) []string {
	var out []string
	for _, a := range p.Agents {
		line := a.Name + " " + string(a.Action)
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		if len(a.Object.Later) > 0 {
			line += " later " + strings.Join(a.Object.Later, ",")
		}
		out = append(out, line)
	}
	return out
}

func TestPlanAgents(t *testing.T) {
	t.Run("upstream routers first, tags mapped, default router", func(t *testing.T) {
		p := NewPlan(source(), Target{}, settings, Choices{})
		if got, want := agents(p), []string{"hub create", "core create", "plant create"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("agents %v, want %v", got, want)
		}
		hub, plant := p.Agents[0].Object, p.Agents[2].Object
		if !hub.DefaultRouter || p.Agents[1].Object.DefaultRouter {
			t.Errorf("default router: hub %v, core %v", hub.DefaultRouter, p.Agents[1].Object.DefaultRouter)
		}
		if !reflect.DeepEqual(plant.UpstreamRouters, []string{hubUUID, coreUUID}) ||
			!reflect.DeepEqual(plant.Tags, []string{"service.iofog.org/tag: checkout", "site: a"}) {
			t.Errorf("plant: upstream %v tags %v", plant.UpstreamRouters, plant.Tags)
		}
		if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "become service.iofog.org/tag: T") {
			t.Errorf("notes %v", p.Notes)
		}
	})

	t.Run("a cycle of interior routers", func(t *testing.T) {
		src := Source{Agents: []SourceAgent{
			{UUID: hubUUID, Name: "hub", RouterMode: "interior", IsSystem: true, UpstreamRouters: []string{coreUUID}},
			{UUID: coreUUID, Name: "core", RouterMode: "interior", UpstreamRouters: []string{"default-router"}},
		}}
		if got, want := agents(NewPlan(src, Target{}, settings, Choices{})), []string{"core create later " + hubUUID, "hub create"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("agents %v, want %v", got, want)
		}
	})

	held := func(change func(*wire.Agent)) Target {
		a := wire.Agent{UUID: hubUUID, Name: "hub", Host: "hub.example.com", RouterMode: "interior", DefaultRouter: true, Tags: []string{}, UpstreamRouters: []string{}}
		change(&a)
		return Target{Agents: []wire.Agent{a}}
	}
	for _, tc := range []struct {
		name string
		dst  Target
		want string
	}{
		{"held as it is", held(func(*wire.Agent) {}), "hub unchanged"},
		{"another host", held(func(a *wire.Agent) { a.Host = "old.example.com" }),
			`hub conflict: svcbridge holds it with host "old.example.com", the source with "hub.example.com"`},
		{"another uuid", held(func(a *wire.Agent) { a.UUID = plantUUID }),
			"hub conflict: svcbridge's agent hub has uuid " + plantUUID + ", the source's " + hubUUID},
		{"its uuid under another name", held(func(a *wire.Agent) { a.Name = "central" }),
			"hub conflict: svcbridge's agent central has its uuid: if an earlier import renamed it, import with --rename agent/hub=central"},
		{"another default router", held(func(a *wire.Agent) { a.UUID, a.Name = plantUUID, "central" }),
			"hub conflict: it is the source's default router, and svcbridge's is central"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agents(NewPlan(source(), tc.dst, settings, Choices{}))[0]; got != tc.want {
				t.Errorf("hub: %q\nwant %q", got, tc.want)
			}
		})
	}

	t.Run("two system agents", func(t *testing.T) {
		src := source()
		src.Agents[1].IsSystem = true
		got := agents(NewPlan(src, Target{}, settings, Choices{}))
		if !strings.HasPrefix(got[0], "core conflict: the source has 2 system agents") || !strings.HasPrefix(got[1], "hub conflict: the source has 2 system agents") {
			t.Fatalf("agents %v", got)
		}
	})
}

func TestPlanDependencies(t *testing.T) {
	src := source()
	src.Agents = src.Agents[:2] // no hub: plant's default-router goes
	src.Microservices = append(src.Microservices, SourceMicroservice{UUID: "m2", Name: "lost", Application: "orders", AgentUUID: "gone"})
	src.Services = append(src.Services, wire.Service{Name: "lost", Type: "microservice", Resource: "m2", TargetPort: 1, BridgePort: 10026},
		wire.Service{Name: "orphan", Type: "microservice", Resource: "m9", TargetPort: 1, BridgePort: 10027})
	p := NewPlan(src, Target{Microservices: []wire.Microservice{{UUID: "other", Application: "orders", Name: "checkout"}}}, settings, Choices{})
	if p.Agents[1].Name != "plant" || !strings.Contains(p.Agents[1].Note, "default-router is no agent of the source") ||
		!reflect.DeepEqual(p.Agents[1].Object.UpstreamRouters, []string{coreUUID}) {
		t.Errorf("plant: %+v", p.Agents[1])
	}
	var got []string
	for _, m := range p.Microservices {
		got = append(got, m.Name+" "+string(m.Action)+": "+m.Reason)
	}
	want := []string{
		"orders/checkout conflict: svcbridge's microservice orders/checkout has uuid other, the source's " + msUUID,
		"orders/lost conflict: its agent gone is neither in the source nor in svcbridge",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("microservices:\n%q\nwant\n%q", got, want)
	}
	// What needs an object of the source in conflict is not imported,
	// which names it; only what is nowhere is named by its uuid.
	svcs := ports(p)
	if svcs["checkout"] != "blocked: microservice orders/checkout is in conflict" ||
		svcs["lost"] != "blocked: microservice orders/lost is in conflict" ||
		svcs["orphan"] != "conflict: its microservice m9 is neither in the source nor in svcbridge" {
		t.Errorf("services %v", svcs)
	}
}
