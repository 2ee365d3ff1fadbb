package service

import (
	"testing"

	"svcbridge/inventory"
)

// A service placed on the remote control plane is reached at its hub
// agent's host: without one it has no endpoint, and Unreachable names the
// agent; the Kubernetes hub and an invalid placement expect none.
func TestUnreachable(t *testing.T) {
	hub := &inventory.Agent{UUID: "u-hub", Name: "hub", RouterMode: inventory.RouterInterior, DefaultRouter: true, Host: "hub.example.com"}
	hostless := *hub
	hostless.Host = ""
	bridge := &inventory.Agent{UUID: "u-br", Name: "bridge-b", RouterMode: inventory.RouterInterior}
	fog := &inventory.Agent{UUID: "u-fog", Name: "fog-a", RouterMode: inventory.RouterEdge, UpstreamRouters: []string{"u-hub", "u-br"}}
	svc := func(typ, bridgeRef string) Service {
		return Service{Spec: Spec{Name: "s", Type: typ, DefaultBridge: bridgeRef}, BridgePort: 10024}
	}
	cases := []struct {
		name string
		in   PlacementInput
		want string
	}{
		{"the hub has a host", PlacementInput{Service: svc(TypeExternal, DefaultBridge), DefaultRouter: hub}, ""},
		{"the hub has none", PlacementInput{Service: svc(TypeExternal, DefaultBridge), DefaultRouter: &hostless},
			"its hub agent hub has no host, so clients have no address to reach it at"},
		{"a custom bridge without a host is the hub", PlacementInput{Service: svc(TypeAgent, "u-br"), Backend: fog, DefaultRouter: hub, Bridge: bridge},
			"its hub agent bridge-b has no host, so clients have no address to reach it at"},
		{"kubernetes: the hub ConfigMap, the LoadBalancer's endpoint", PlacementInput{Service: svc(TypeAgent, DefaultBridge), Backend: fog,
			ControlPlane: ControlPlaneKubernetes}, ""},
		{"invalid placement: its failure says why", PlacementInput{Service: svc(TypeExternal, DefaultBridge)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := Place(c.in)
			placed := c.in.Service.WithPlacement(p, c.in.ControlPlane)
			if got := Unreachable(placed, c.in.AgentName); got != c.want {
				t.Errorf("Unreachable = %q, want %q", got, c.want)
			}
		})
	}
	// As stored: a pass recorded the endpoint as "" (or none).
	empty := ""
	for _, ep := range []*string{nil, &empty} {
		stored := Service{ServiceEndpoint: ep, Placement: Placement{HubSite: "u-hub"}}
		if got := Unreachable(stored, func(uuid string) string { return "<" + uuid + ">" }); got != "its hub agent <u-hub> has no host, so clients have no address to reach it at" {
			t.Errorf("stored endpoint %v: %q", ep, got)
		}
	}
}
