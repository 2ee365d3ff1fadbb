package service

import (
	"slices"
	"testing"

	"svcbridge/inventory"
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

func TestPlanRouterRebuildsOwnedEntriesOnly(t *testing.T) {
	current := `{"bridges":{"tcpListeners":{"stale-listener":{"name":"stale-listener","port":"1","address":"stale"},"mine":{"name":"mine"}},
		"tcpConnectors":{"old-connector":{"name":"old-connector"},"foreign-connector":{"name":"foreign-connector"}}},"siteConfig":{"x":1}}`
	plan, err := PlanRouter([]byte(current),
		[]ListenerWant{{Service: "checkout", BridgePort: 10024}},
		[]ConnectorWant{{Service: "ssh", TargetPort: 22, Backend: Backend{Type: TypeAgent, Resource: "a1", RouterMode: inventory.RouterEdge}}},
		[]string{"old", "ssh"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bridges":{"tcpConnectors":{"foreign-connector":{"name":"foreign-connector"},` +
		`"ssh-connector":{"name":"ssh-connector","host":"edgelet.default.svc.bridge.local","port":"22","address":"ssh","processId":"a1-local-22"}},` +
		`"tcpListeners":{"checkout-listener":{"name":"checkout-listener","port":"10024","address":"checkout"},"mine":{"name":"mine"}}},"siteConfig":{"x":1}}`
	if string(plan.Config) != want {
		t.Errorf("config\n got %s\nwant %s", plan.Config, want)
	}
	if !plan.Changed || !plan.Rewritten["listener/checkout"] || !plan.Rewritten["connector/ssh"] {
		t.Errorf("changed %v rewritten %v, want both objects rewritten", plan.Changed, plan.Rewritten)
	}
	if want := []string{"listener/stale-listener", "connector/old-connector"}; !slices.Equal(plan.Removed, want) {
		t.Errorf("removed %v, want %v", plan.Removed, want)
	}
	again, _ := PlanRouter(plan.Config, []ListenerWant{{Service: "checkout", BridgePort: 10024}},
		[]ConnectorWant{{Service: "ssh", TargetPort: 22, Backend: Backend{Type: TypeAgent, Resource: "a1", RouterMode: inventory.RouterEdge}}}, []string{"ssh"})
	if again.Changed || len(again.Rewritten) != 0 {
		t.Errorf("a second identical plan changed %v rewritten %v, want a no-op", again.Changed, again.Rewritten)
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
			"Invalid router connection, router br is not connected to fog-a"},
		{"custom bridge for an external backend", PlacementInput{Service: svc(TypeExternal, "br"), DefaultRouter: hub, Bridge: bridge}, "", "", "",
			"Invalid router connection, router br is not connected to "},
		{"custom bridge gone", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, DefaultRouter: hub}, "", "", "", "Invalid router 'br'"},
		{"custom bridge without router", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, DefaultRouter: hub, Bridge: edgeBridge}, "", "", "", "Invalid router 'br'"},
		{"kubernetes: the upstream rule holds too", PlacementInput{Service: svc(TypeAgent, "br"), Backend: loose, Bridge: bridge, ControlPlane: ControlPlaneKubernetes}, "", "", "",
			"Invalid router connection, router br is not connected to fog-a"},
		{"kubernetes: custom bridge", PlacementInput{Service: svc(TypeAgent, "br"), Backend: fog, Bridge: bridge, ControlPlane: ControlPlaneKubernetes}, "fog", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Place(c.in)
			if c.fail != "" {
				if err == nil || err.Error() != c.fail {
					t.Fatalf("error %v, want %q", err, c.fail)
				}
				if p.ConnectorSite != "" || p.HubSite != "" || p.Endpoint != nil {
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
		})
	}
}
