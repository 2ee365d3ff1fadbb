package service

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
)

// applyPlan stores a plan as the activities do: the base when it changed,
// the rows written and deleted.
func applyPlan(base []byte, have []routerconfig.Held, p RouterPlan) ([]byte, []routerconfig.Held) {
	if p.BaseChanged {
		base = p.Base
	}
	rows := map[[2]string]routerconfig.Held{}
	for _, h := range have {
		rows[[2]string{h.Kind, h.Service}] = h
	}
	for _, d := range p.Delete {
		delete(rows, [2]string{d.Kind, d.Service})
	}
	for _, w := range p.Write {
		rows[[2]string{w.Kind, w.Service}] = w
	}
	out := slices.Collect(maps.Values(rows))
	slices.SortFunc(out, func(a, b routerconfig.Held) int { return strings.Compare(a.Kind+a.Service, b.Kind+b.Service) })
	return base, out
}

func TestPlanRouterRebuildsOwnedEntriesOnly(t *testing.T) {
	// A document from before objects were rows: svcbridge's objects are in
	// it, recorded without their JSON.
	legacy := `{"bridges":{"tcpListeners":{"stale-listener":{"name":"stale-listener","port":"1","address":"stale"},"mine":{"name":"mine"}},
		"tcpConnectors":{"old-connector":{"name":"old-connector"},"foreign-connector":{"name":"foreign-connector"}}},"siteConfig":{"x":1}}`
	have := []routerconfig.Held{{Kind: routerconfig.KindConnector, Service: "old"}, {Kind: routerconfig.KindConnector, Service: "ssh"}}
	listeners := []ListenerWant{{Service: "checkout", BridgePort: 10024}}
	connectors := []ConnectorWant{{Service: "ssh", TargetPort: 22, Backend: Backend{Type: TypeAgent, Resource: "a1", RouterMode: inventory.RouterEdge}}}
	plan, err := PlanRouter([]byte(legacy), have, listeners, connectors, nil)
	if err != nil {
		t.Fatal(err)
	}
	base, rows := applyPlan([]byte(legacy), have, plan)
	doc, _ := routerconfig.Assemble(base, rows)
	want := `{"bridges":{"tcpConnectors":{"foreign-connector":{"name":"foreign-connector"},` +
		`"ssh-connector":{"name":"ssh-connector","host":"edgelet.default.svc.bridge.local","port":"22","address":"ssh","processId":"a1-local-22"}},` +
		`"tcpListeners":{"checkout-listener":{"name":"checkout-listener","port":"10024","address":"checkout"},"mine":{"name":"mine"}}},"siteConfig":{"x":1}}`
	if string(doc) != want {
		t.Errorf("document\n got %s\nwant %s", doc, want)
	}
	if wantBase := `{"bridges":{"tcpConnectors":{"foreign-connector":{"name":"foreign-connector"}},"tcpListeners":{"mine":{"name":"mine"}}},"siteConfig":{"x":1}}`; string(base) != wantBase {
		t.Errorf("base\n got %s\nwant %s (svcbridge's objects live in rows)", base, wantBase)
	}
	if !plan.Changed() || !plan.Rewritten["listener/checkout"] || !plan.Rewritten["connector/ssh"] {
		t.Errorf("changed %v rewritten %v, want both objects rewritten", plan.Changed(), plan.Rewritten)
	}
	if want := []string{"connector/old-connector", "listener/stale-listener"}; !slices.Equal(plan.Removed, want) {
		t.Errorf("removed %v, want %v", plan.Removed, want)
	}
	// stale-listener was in the base only: no service's.
	if want := []string{"checkout", "old", "ssh"}; !slices.Equal(plan.Touched, want) {
		t.Errorf("touched %v, want %v", plan.Touched, want)
	}
	again, _ := PlanRouter(base, rows, listeners, connectors, nil)
	if again.Changed() || again.BaseChanged || len(again.Write)+len(again.Delete) != 0 {
		t.Errorf("a second identical plan: %+v, want a no-op", again)
	}
}

func TestPlanRouterScopedToOneService(t *testing.T) {
	listener := func(s string, port int) routerconfig.Held {
		return routerconfig.Held{Kind: routerconfig.KindListener, Service: s, JSON: Listener(s, port).JSON()}
	}
	clean := []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{"theirs-listener":{"name":"theirs-listener"}}}}`)
	others := []routerconfig.Held{listener("a", 10001), listener("b", 10002)}
	for _, c := range []struct {
		name      string
		base      []byte
		have      []routerconfig.Held
		listeners []ListenerWant
		// the plan's effect
		write, delete, removed []string
		rewritten, baseChanged bool
	}{
		{name: "add", base: clean, have: others, listeners: []ListenerWant{{Service: "new", BridgePort: 10003}},
			write: []string{"listener/new"}, rewritten: true},
		{name: "unchanged", base: clean, have: append(slices.Clone(others), listener("new", 10003)), listeners: []ListenerWant{{Service: "new", BridgePort: 10003}}},
		{name: "new port", base: clean, have: append(slices.Clone(others), listener("new", 10003)), listeners: []ListenerWant{{Service: "new", BridgePort: 10009}},
			write: []string{"listener/new"}, rewritten: true},
		{name: "remove", base: clean, have: append(slices.Clone(others), listener("new", 10003)),
			delete: []string{"listener/new"}, removed: []string{"listener/new-listener"}},
		{name: "moved out of a legacy base unchanged", base: []byte(`{"bridges":{"tcpListeners":{"new-listener":{"name":"new-listener","port":"10003","address":"new"}}}}`),
			have: []routerconfig.Held{{Kind: routerconfig.KindListener, Service: "new"}}, listeners: []ListenerWant{{Service: "new", BridgePort: 10003}},
			write: []string{"listener/new"}, baseChanged: true},
		{name: "removed from a legacy base", base: []byte(`{"bridges":{"tcpListeners":{"new-listener":{"name":"new-listener","port":"10003","address":"new"}}}}`),
			have:   []routerconfig.Held{{Kind: routerconfig.KindListener, Service: "new"}},
			delete: []string{"listener/new"}, removed: []string{"listener/new-listener"}, baseChanged: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanRouter(c.base, c.have, c.listeners, nil, []string{"new"})
			if err != nil {
				t.Fatal(err)
			}
			names := func(hs []routerconfig.Held) []string {
				var out []string
				for _, h := range hs {
					out = append(out, h.Kind+"/"+h.Service)
				}
				return out
			}
			if !slices.Equal(names(p.Write), c.write) || !slices.Equal(names(p.Delete), c.delete) || !slices.Equal(p.Removed, c.removed) {
				t.Errorf("write %v delete %v removed %v, want %v %v %v", names(p.Write), names(p.Delete), p.Removed, c.write, c.delete, c.removed)
			}
			if p.Rewritten["listener/new"] != c.rewritten || p.BaseChanged != c.baseChanged {
				t.Errorf("rewritten %v base changed %v, want %v %v", p.Rewritten, p.BaseChanged, c.rewritten, c.baseChanged)
			}
			if p.Changed() != (c.rewritten || len(c.removed) > 0) {
				t.Errorf("changed %v", p.Changed())
			}
			if touched := slices.Equal(p.Touched, []string{"new"}); touched != p.Changed() || (!touched && len(p.Touched) > 0) {
				t.Errorf("touched %v, want [new] exactly when the router sees a change", p.Touched)
			}
		})
	}
}

// TestScopedPlansAgreeWithTheWholeRouter: planning each service alone gives
// the router the same document as planning it whole.
func TestScopedPlansAgreeWithTheWholeRouter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		base := []byte(`{"bridges":{"tcpConnectors":{"theirs":{"name":"theirs"}},"tcpListeners":{}},"x":1}`)
		var have []routerconfig.Held
		services := []string{"a", "b", "c", "d"}
		// what the router holds now: a random earlier plan
		wants := func() ([]ListenerWant, []ConnectorWant) {
			var ls []ListenerWant
			var cs []ConnectorWant
			for _, s := range services {
				if rng.IntN(2) == 0 {
					ls = append(ls, ListenerWant{Service: s, BridgePort: 10000 + rng.IntN(3)})
				}
				if rng.IntN(3) == 0 {
					cs = append(cs, ConnectorWant{Service: s, TargetPort: 80 + rng.IntN(2), Backend: Backend{Type: TypeExternal, Resource: "h"}})
				}
			}
			return ls, cs
		}
		ls, cs := wants()
		p, _ := PlanRouter(base, have, ls, cs, nil)
		base, have = applyPlan(base, have, p)

		ls, cs = wants()
		whole, _ := PlanRouter(base, have, ls, cs, nil)
		wb, wh := applyPlan(base, have, whole)
		sb, sh := base, have
		for _, s := range services {
			var sl []ListenerWant
			var sc []ConnectorWant
			for _, l := range ls {
				if l.Service == s {
					sl = append(sl, l)
				}
			}
			for _, c := range cs {
				if c.Service == s {
					sc = append(sc, c)
				}
			}
			one, _ := PlanRouter(sb, sh, sl, sc, []string{s})
			sb, sh = applyPlan(sb, sh, one)
		}
		wd, _ := routerconfig.Assemble(wb, wh)
		sd, _ := routerconfig.Assemble(sb, sh)
		if string(wd) != string(sd) {
			t.Fatalf("whole router\n %s\nservice by service\n %s", wd, sd)
		}
	}
}
