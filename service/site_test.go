package service

import (
	"reflect"
	"testing"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
)

func TestPlanSite(t *testing.T) {
	hub := inventory.Agent{UUID: "hub-uuid", Name: "hub", Host: "hub.example.com", RouterMode: inventory.RouterInterior, DefaultRouter: true}
	core := inventory.Agent{UUID: "core-uuid", Name: "core", RouterMode: inventory.RouterInterior}
	edge := inventory.Agent{UUID: "edge-uuid", Name: "edge", RouterMode: inventory.RouterEdge}
	toHub := routerconfig.Link{Name: "hub-uuid", Host: "hub.example.com", Port: routerconfig.EdgePort, Role: routerconfig.RoleEdge}
	for _, tc := range []struct {
		name string
		a    inventory.Agent
		ups  []inventory.Agent
		def  *inventory.Agent
		want routerconfig.Site
	}{
		{"an edge router uplinks to its upstream's edge port", edge, []inventory.Agent{hub}, &hub,
			routerconfig.Site{ID: "edge-uuid", Mode: routerconfig.ModeEdge, Links: []routerconfig.Link{toHub}}},
		{"with no upstream routers, to the default router", edge, nil, &hub,
			routerconfig.Site{ID: "edge-uuid", Mode: routerconfig.ModeEdge, Links: []routerconfig.Link{toHub}}},
		{"with no default router either, to nothing", edge, nil, nil,
			routerconfig.Site{ID: "edge-uuid", Mode: routerconfig.ModeEdge}},
		{"an interior router links inter-router, to an upstream by name when it has no host", hub, []inventory.Agent{core}, &hub,
			routerconfig.Site{ID: "hub-uuid", Mode: routerconfig.ModeInterior, Links: []routerconfig.Link{{Name: "core-uuid", Host: "core", Port: routerconfig.InterRouterPort, Role: routerconfig.RoleInterRouter}}}},
		{"the default router does not link to itself", hub, nil, &hub,
			routerconfig.Site{ID: "hub-uuid", Mode: routerconfig.ModeInterior}},
		{"an interior router with no upstream links to the default router", core, nil, &hub,
			routerconfig.Site{ID: "core-uuid", Mode: routerconfig.ModeInterior, Links: []routerconfig.Link{{Name: "hub-uuid", Host: "hub.example.com", Port: routerconfig.InterRouterPort, Role: routerconfig.RoleInterRouter}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanSite(tc.a, tc.ups, tc.def); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PlanSite = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUplinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    inventory.Agent
		def  string
		want []string
	}{
		{"its upstream routers", inventory.Agent{UUID: "e", RouterMode: inventory.RouterEdge, UpstreamRouters: []string{"c1", "c2"}}, "hub", []string{"c1", "c2"}},
		{"none listed: the default router", inventory.Agent{UUID: "e", RouterMode: inventory.RouterEdge}, "hub", []string{"hub"}},
		{"no default router: nothing", inventory.Agent{UUID: "e", RouterMode: inventory.RouterEdge}, "", []string{}},
		{"the default router: not itself", inventory.Agent{UUID: "hub", RouterMode: inventory.RouterInterior, DefaultRouter: true}, "hub", []string{}},
		{"no router: no links", inventory.Agent{UUID: "n", RouterMode: inventory.RouterNone, UpstreamRouters: []string{"hub"}}, "hub", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Uplinks(tc.a, tc.def); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Uplinks = %q, want %q", got, tc.want)
			}
		})
	}
}
