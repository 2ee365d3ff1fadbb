package importer

import (
	"reflect"
	"strings"
	"testing"

	"svcbridge/wire"
)

func TestChoicesParse(t *testing.T) {
	var c Choices
	for _, r := range []string{"agent/Edge_5=edge-5", "microservice/orders/check_out=orders/check-out", "microservice/orders/x.y=xy", "service/a.b = a-b"} {
		if err := c.AddRename(r); err != nil {
			t.Fatalf("AddRename(%q): %v", r, err)
		}
	}
	file := "# renames\n\nservice/long_one=long-one  # the reference's name\n"
	if err := c.ReadRenames(strings.NewReader(file), "renames.txt"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddSkip("agent/lab"); err != nil {
		t.Fatal(err)
	}
	want := map[Ref]string{
		{KindAgent, "Edge_5"}:                  "edge-5",
		{KindMicroservice, "orders/check_out"}: "orders/check-out",
		{KindMicroservice, "orders/x.y"}:       "orders/xy", // a name alone stays in its application
		{KindService, "a.b"}:                   "a-b",
		{KindService, "long_one"}:              "long-one",
	}
	if !reflect.DeepEqual(c.Renames, want) || !reflect.DeepEqual(c.Skips, map[Ref]bool{{KindAgent, "lab"}: true}) {
		t.Errorf("renames %v skips %v", c.Renames, c.Skips)
	}

	for _, tc := range []struct{ in, want string }{
		{"Edge_5=edge-5", `"Edge_5": want KIND/NAME, KIND agent, microservice or service`},
		{"agent/Edge_5", `"agent/Edge_5": want KIND/OLD=NEW`},
		{"agent/=x", `"agent/": want agent/NAME`},
		{"microservice/checkout=x", `"microservice/checkout": want microservice/APPLICATION/NAME`},
		{"agent/a=", `"agent/a=": the new name is empty or not a agent name`},
		{"agent/a=b/c", `"agent/a=b/c": the new name is empty or not a agent name`},
		{"agent/Edge_5=other", "agent/Edge_5 is renamed twice, to edge-5 and to other"},
	} {
		if err := c.AddRename(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("AddRename(%q): %v, want %s", tc.in, err, tc.want)
		}
	}
	if err := c.ReadRenames(strings.NewReader("agent/a=b\nbad\n"), "f"); err == nil || err.Error() != `f:2: "bad": want KIND/OLD=NEW` {
		t.Errorf("ReadRenames: %v", err)
	}
	if err := c.AddSkip("lab"); err == nil {
		t.Error("AddSkip(lab) accepted")
	}
}

func TestChoicesCheck(t *testing.T) {
	src := source() // agents plant, core, hub; microservice orders/checkout; services checkout, billing, legacy, ssh
	var c Choices
	for _, r := range []string{"agent/plant=core", "agent/nowhere=x", "service/ssh=ssh-2"} {
		c.AddRename(r)
	}
	c.AddSkip("service/ssh")
	c.AddSkip("microservice/orders/gone")
	err := c.Check(src)
	want := "--rename agent/nowhere: the controller has no agent nowhere; " +
		"--skip microservice/orders/gone: the controller has no microservice orders/gone; " +
		"service/ssh is both renamed and skipped; " +
		"the controller's agents core and plant would both be agent core in svcbridge"
	if err == nil || err.Error() != want {
		t.Errorf("Check:\n%v\nwant\n%s", err, want)
	}
	if err := (Choices{}).Check(src); err != nil {
		t.Errorf("no choices: %v", err)
	}
}

// steps are the plan's steps as "kind/name action: reason (from)".
func steps(p Plan) []string {
	var out []string
	p.each(func(kind string, h *Head) {
		line := kind + "/" + h.Name + " " + string(h.Action)
		if h.Reason != "" {
			line += ": " + h.Reason
		}
		if h.From != "" {
			line += " (from " + h.From + ")"
		}
		out = append(out, line)
	})
	return out
}

func TestPlanRenamesAndSkips(t *testing.T) {
	src := source()
	src.Agents[0].Name = "Plant_1" // plant: checkout's microservice and ssh run on it
	src.Services = append(src.Services, wire.Service{Name: "audit.log", Type: "external", Resource: "audit.example.com", TargetPort: 514,
		DefaultBridge: "default-router", BridgePort: 10026})
	var c Choices
	c.AddRename("agent/Plant_1=plant-1")
	c.AddRename("service/audit.log=audit-log")
	c.AddSkip("agent/core")
	if err := c.Check(src); err != nil {
		t.Fatal(err)
	}
	p := NewPlan(src, Target{}, settings, c)
	want := []string{
		"agent/hub create",
		"agent/core skip",
		// plant-1 routes through core: without it, it cannot be imported.
		"agent/plant-1 skip: agent core is skipped (from Plant_1)",
		"microservice/orders/checkout skip: agent core is skipped",
		"service/audit-log create (from audit.log)",
		"service/billing create",
		"service/checkout skip: agent core is skipped",
		"service/legacy create",
		"service/ssh skip: agent core is skipped",
	}
	if got := steps(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("steps:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Skipped services keep their ports from being given away.
	if got := ports(p); got["audit-log"] != "create 10026->10026" || got["legacy"] != "create 9000->10030 (outside BRIDGE_PORTS_RANGE 10024-10030)" {
		t.Errorf("ports %v", got)
	}

	// Without the skip, the rename reaches every reference, which are by
	// uuid: checkout's microservice, ssh's resource, the agent's line.
	c.Skips = nil
	p = NewPlan(src, Target{}, settings, c)
	plant := p.Agents[2]
	if plant.Name != "plant-1" || plant.From != "Plant_1" || plant.Object.Name != "plant-1" || plant.Action != Create ||
		p.Microservices[0].Object.AgentUUID != plantUUID || p.Microservices[0].Needs[0] != (Need{Ref: Ref{KindAgent, "plant-1"}, UUID: plantUUID}) {
		t.Errorf("plant: %+v\nmicroservice: %+v", plant, p.Microservices[0])
	}

	// What the import created, held by svcbridge: all unchanged.
	var dst Target
	for _, a := range p.Agents {
		o := a.Object
		dst.Agents = append(dst.Agents, wire.Agent{UUID: o.UUID, Name: o.Name, Host: o.Host, RouterMode: o.RouterMode,
			DefaultRouter: o.DefaultRouter, Tags: o.Tags, UpstreamRouters: o.UpstreamRouters})
	}
	for _, m := range p.Microservices {
		o := m.Object
		dst.Microservices = append(dst.Microservices, wire.Microservice{UUID: o.UUID, Application: o.Application, Name: o.Name, Agent: o.AgentUUID})
	}
	dst.Services = heldServices(p)
	for _, line := range steps(NewPlan(src, dst, settings, c)) {
		if !strings.Contains(line, " unchanged") {
			t.Errorf("again with the same renames: %s", line)
		}
	}
}

// heldServices are the services p creates, as svcbridge then holds them.
func heldServices(p Plan) []wire.Service {
	var out []wire.Service
	for _, s := range p.Services {
		if s.Action == Create || s.Action == Unchanged {
			o := s.Object
			out = append(out, wire.Service{Name: o.Name, Tags: o.Tags, Type: o.Type, Resource: o.Resource, TargetPort: o.TargetPort,
				DefaultBridge: o.DefaultBridge, BridgePort: s.Port.Port})
		}
	}
	return out
}

func TestResolveRefsByName(t *testing.T) {
	src := source()
	src.Agents[0].UpstreamRouters = []string{"default-router", "core"}
	src.Services[0].Resource = "orders/checkout"
	src.Services[3].Resource, src.Services[3].DefaultBridge = "plant", "core"
	var c Choices
	c.AddRename("agent/plant=plant-1")
	c.AddRename("microservice/orders/checkout=shop")
	p := NewPlan(src, Target{}, settings, c)
	svcs := map[string]Service{}
	for _, s := range p.Services {
		svcs[s.Name] = s.Object
	}
	if got := p.Agents[2].Object.UpstreamRouters; !reflect.DeepEqual(got, []string{hubUUID, coreUUID}) {
		t.Errorf("plant's upstream routers %v", got)
	}
	if svcs["checkout"].Resource != msUUID || svcs["ssh"].Resource != plantUUID || svcs["ssh"].DefaultBridge != coreUUID {
		t.Errorf("services %+v", svcs)
	}
	if p.Microservices[0].Name != "orders/shop" || p.Microservices[0].From != "orders/checkout" {
		t.Errorf("microservice %+v", p.Microservices[0].Head)
	}
}
