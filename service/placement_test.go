package service

import (
	"reflect"
	"testing"

	"svcbridge/inventory"
)

func TestSameSites(t *testing.T) {
	host, other := "hub.example.com", "other.example.com"
	stored := Placement{ConnectorSite: "fog", HubSite: "hub", Endpoint: &host, BackendAgent: "fog", BridgeAgent: "hub"}
	cases := []struct {
		name   string
		change func(*Placement)
		same   bool
	}{
		{"unchanged", func(*Placement) {}, true},
		{"only the endpoint, which the row keeps apart", func(p *Placement) { p.Endpoint = &other }, true},
		{"connector moved", func(p *Placement) { p.ConnectorSite = "hub" }, false},
		{"hub listener moved", func(p *Placement) { p.HubSite = "hub-2" }, false},
		{"follows another backend agent", func(p *Placement) { p.BackendAgent = "" }, false},
		{"follows another bridge agent", func(p *Placement) { p.BridgeAgent = "hub-2" }, false},
		{"now follows the default router", func(p *Placement) { p.OnDefaultRouter = true }, false},
		{"invalid now: no sites", func(p *Placement) { p.ConnectorSite, p.HubSite = "", "" }, false},
		{"the hub ConfigMap, which the control plane decides", func(p *Placement) { p.HubConfigMap = true }, true},
	}
	for _, c := range cases {
		q := stored
		c.change(&q)
		if got := q.SameSites(stored); got != c.same {
			t.Errorf("%s: SameSites = %v, want %v", c.name, got, c.same)
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

func TestConnectorOnHub(t *testing.T) {
	for typ, onHub := range map[string]bool{
		TypeMicroservice: false, // on the backend agent's router
		TypeAgent:        false,
		TypeK8s:          true, // the hub reaches the backend
		TypeExternal:     true,
	} {
		if got := ConnectorOnHub(typ); got != onHub {
			t.Errorf("ConnectorOnHub(%s) = %v, want %v", typ, got, onHub)
		}
	}
}

func TestWithPlacement(t *testing.T) {
	host := "hub.example.com"
	placed := Placement{ConnectorSite: "fog", HubSite: "hub", Endpoint: &host, BackendAgent: "fog", OnDefaultRouter: true}
	servicePort, lb, lbEndpoint := 80, LoadBalancer, "203.0.113.7"
	spec := Spec{Name: "checkout", Type: TypeMicroservice, ServicePort: &servicePort, K8sType: &lb}
	stored := Service{Spec: spec, BridgePort: 10024, ServiceEndpoint: &lbEndpoint}
	cases := []struct {
		name     string
		plane    ControlPlane
		p        Placement
		port     *int
		k8sType  *string
		endpoint *string
	}{
		{"remote: the bridge port, at the hub's host", ControlPlaneRemote, placed, new(10024), nil, &host},
		{"remote, unplaced: no endpoint", ControlPlaneRemote, Placement{BackendAgent: "fog"}, new(10024), nil, nil},
		{"kubernetes: the spec's own, the endpoint Kubernetes gave", ControlPlaneKubernetes, Placement{ConnectorSite: "fog", HubConfigMap: true},
			&servicePort, &lb, &lbEndpoint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := stored.WithPlacement(c.p, c.plane)
			want := stored
			want.Placement, want.ServicePort, want.K8sType, want.ServiceEndpoint = c.p, c.port, c.k8sType, c.endpoint
			if !reflect.DeepEqual(got, want) {
				t.Errorf("WithPlacement = %+v\nwant %+v", got, want)
			}
			if stored.ServicePort != &servicePort || stored.K8sType != &lb || stored.Placement.ConnectorSite != "" {
				t.Errorf("WithPlacement changed the service it was given: %+v", stored)
			}
		})
	}
}
