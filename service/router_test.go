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

func TestConnectorHostAndProcessIDFollowTheSeedTables(t *testing.T) {
	ms := Backend{Type: TypeMicroservice, Resource: "11111111-1111-1111-1111-111111111111", Application: "orders", Microservice: "checkout"}
	edge, interior := inventory.RouterEdge, inventory.RouterInterior
	with := func(b Backend, mode string, hostNet bool) Backend {
		b.RouterMode, b.HostNetwork = mode, hostNet
		return b
	}
	cases := []struct {
		name       string
		b          Backend
		port       int
		host, proc string
	}{
		{"microservice on edge", with(ms, edge, false), 8080, "orders.checkout", ms.Resource},
		{"microservice on edge, host network", with(ms, edge, true), 8080, EdgeletHost, ms.Resource},
		{"microservice on interior", with(ms, interior, false), 8080, "127.0.0.1", ms.Resource},
		{"microservice on interior, host network", with(ms, interior, true), 8080, "127.0.0.1", ms.Resource},
		{"agent on edge", Backend{Type: TypeAgent, Resource: "fog-a", RouterMode: edge}, 22, EdgeletHost, "fog-a-local-22"},
		{"agent on interior", Backend{Type: TypeAgent, Resource: "fog-a", RouterMode: interior}, 22, "127.0.0.1", "fog-a-local-22"},
		{"k8s", Backend{Type: TypeK8s, Resource: "payments.payments.svc.cluster.local"}, 8080,
			"payments.payments.svc.cluster.local", "payments.payments.svc.cluster.local-k8s-8080"},
		{"external", Backend{Type: TypeExternal, Resource: "203.0.113.10"}, 443, "203.0.113.10", "203.0.113.10-external-443"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ConnectorHost(c.b); got != c.host {
				t.Errorf("host %q, want %q", got, c.host)
			}
			if got := ProcessID(c.b, c.port); got != c.proc {
				t.Errorf("processId %q, want %q", got, c.proc)
			}
		})
	}
}

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

func TestPlaceFindsSitesOrSaysWhyNot(t *testing.T) {
	hub := &inventory.Agent{UUID: "hub", Name: "hub", RouterMode: inventory.RouterInterior, DefaultRouter: true, Host: "hub.example.com"}
	fog := &inventory.Agent{UUID: "fog", Name: "fog-a", RouterMode: inventory.RouterEdge, UpstreamRouters: []string{"hub", "br"}}
	loose := &inventory.Agent{UUID: "fog", Name: "fog-a", RouterMode: inventory.RouterEdge, UpstreamRouters: []string{"hub"}}
	none := &inventory.Agent{UUID: "n", Name: "plain", RouterMode: inventory.RouterNone}
	bridge := &inventory.Agent{UUID: "br", Name: "bridge-b", RouterMode: inventory.RouterInterior, Host: "br.example.com"}
	edgeBridge := &inventory.Agent{UUID: "br", Name: "bridge-b", RouterMode: inventory.RouterNone}
	svc := func(typ, bridgeRef string) Service {
		return Service{Spec: Spec{Name: "s", Type: typ, DefaultBridge: bridgeRef}}
	}
	cases := []struct {
		name           string
		in             PlacementInput
		conn, hubSite  string
		endpoint, fail string
	}{
		{"microservice", PlacementInput{Service: svc(TypeMicroservice, DefaultBridge), Backend: fog, DefaultRouter: hub}, "fog", "hub", "hub.example.com", ""},
		{"external on the hub", PlacementInput{Service: svc(TypeExternal, DefaultBridge), DefaultRouter: hub}, "hub", "hub", "hub.example.com", ""},
		{"custom bridge", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, DefaultRouter: hub, Bridge: bridge}, "fog", "br", "br.example.com", ""},
		{"backend without router", PlacementInput{Service: svc(TypeAgent, DefaultBridge), Backend: none, DefaultRouter: hub}, "", "", "",
			"Agent plain has routerMode none: a TCP bridge service requires a router on the agent"},
		{"no default router", PlacementInput{Service: svc(TypeExternal, DefaultBridge)}, "", "", "",
			"Default router not found: set defaultRouter on one interior agent"},
		{"kubernetes: hub objects in the ConfigMap", PlacementInput{Service: svc(TypeMicroservice, DefaultBridge), Backend: fog, ControlPlane: ControlPlaneKubernetes}, "fog", "", "", ""},
		{"backend gone", PlacementInput{Service: svc(TypeAgent, DefaultBridge), DefaultRouter: hub}, "", "", "",
			"The backend agent  no longer exists"},
		// The upstream rule: a custom bridge is one of the backend's upstream routers.
		{"custom bridge not upstream of the backend", PlacementInput{Service: svc(TypeAgent, "br"), Backend: loose, DefaultRouter: hub, Bridge: bridge}, "", "", "",
			"Invalid router connection, router bridge-b is not connected to fog-a"},
		{"custom bridge for an external backend", PlacementInput{Service: svc(TypeExternal, "br"), DefaultRouter: hub, Bridge: bridge}, "", "", "",
			"Invalid router connection, router bridge-b is not connected to "},
		{"custom bridge gone", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, DefaultRouter: hub}, "", "", "", "Invalid router 'br'"},
		{"custom bridge without router", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, DefaultRouter: hub, Bridge: edgeBridge}, "", "", "", "Invalid router 'bridge-b'"},
		{"kubernetes: the upstream rule holds too", PlacementInput{Service: svc(TypeAgent, "br"), Backend: loose, Bridge: bridge, ControlPlane: ControlPlaneKubernetes}, "", "", "",
			"Invalid router connection, router bridge-b is not connected to fog-a"},
		{"kubernetes: custom bridge", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, Bridge: bridge, ControlPlane: ControlPlaneKubernetes}, "fog", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Place(c.in)
			if c.fail != "" {
				if err == nil || err.Error() != c.fail {
					t.Fatalf("error %v, want %q", err, c.fail)
				}
				if p.ConnectorSite != "" || p.HubSite != "" || p.HubConfigMap || p.Endpoint != nil {
					t.Errorf("an invalid placement placed objects: %+v", p)
				}
			}
			if err != nil && c.fail == "" {
				t.Fatal(err)
			}
			// What the placement depends on is known even when it fails.
			if c.in.Backend != nil && p.BackendAgent != c.in.Backend.UUID {
				t.Errorf("backend agent %q, want %q", p.BackendAgent, c.in.Backend.UUID)
			}
			if c.in.Service.DefaultBridge != DefaultBridge && c.in.Bridge != nil && p.BridgeAgent != c.in.Bridge.UUID {
				t.Errorf("bridge agent %q, want %q", p.BridgeAgent, c.in.Bridge.UUID)
			}
			followsHub := c.in.ControlPlane != ControlPlaneKubernetes &&
				(c.in.Service.DefaultBridge == DefaultBridge || c.in.Service.Type == TypeExternal)
			if p.OnDefaultRouter != followsHub {
				t.Errorf("on default router %v, want %v", p.OnDefaultRouter, followsHub)
			}
			if c.fail != "" {
				return
			}
			ep := ""
			if p.Endpoint != nil {
				ep = *p.Endpoint
			}
			if p.ConnectorSite != c.conn || p.HubSite != c.hubSite || ep != c.endpoint {
				t.Errorf("got %s/%s/%q, want %s/%s/%q", p.ConnectorSite, p.HubSite, ep, c.conn, c.hubSite, c.endpoint)
			}
			// The hub is an agent's router or the ConfigMap, never both.
			if onKube := c.in.ControlPlane.Kubernetes(); p.HubConfigMap != onKube || (p.HubSite == "") != onKube {
				t.Errorf("hub site %q, hub ConfigMap %v on control plane %q", p.HubSite, p.HubConfigMap, c.in.ControlPlane)
			}
		})
	}
}
