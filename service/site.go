package service

import (
	"svcbridge/inventory"
	"svcbridge/routerconfig"
)

// PlanSite decides what an agent's router needs beyond bridges to join the
// network: its id (the agent's uuid, which a rename does not change), its
// mode, and a link to each upstream router (ups, a's upstreamRouters in
// order). An agent that lists none links to the default router (def, nil
// when there is none), as an ioFog agent does; the default router itself
// links to nothing it does not list. An edge router's link is an uplink to
// the upstream's edge port, an interior router's an inter-router link. An
// upstream without a host is dialled by its name.
func PlanSite(a inventory.Agent, ups []inventory.Agent, def *inventory.Agent) routerconfig.Site {
	site := routerconfig.Site{ID: a.UUID, Mode: routerconfig.ModeEdge}
	if a.RouterMode == inventory.RouterInterior {
		site.Mode = routerconfig.ModeInterior
	}
	if len(ups) == 0 && def != nil && linksToDefault(a, def.UUID) {
		ups = []inventory.Agent{*def}
	}
	for _, up := range ups {
		l := routerconfig.Link{Name: up.UUID, Host: up.Host, Port: routerconfig.InterRouterPort, Role: routerconfig.RoleInterRouter}
		if l.Host == "" {
			l.Host = up.Name
		}
		if site.Mode == routerconfig.ModeEdge {
			l.Port, l.Role = routerconfig.EdgePort, routerconfig.RoleEdge
		}
		site.Links = append(site.Links, l)
	}
	return site
}

// Uplinks are the uuids of the routers a's router links to, as PlanSite
// decides: its upstream routers, else the default router (def, "" when
// there is none); none for an agent without a router.
func Uplinks(a inventory.Agent, def string) []string {
	switch {
	case a.RouterMode == inventory.RouterNone:
		return []string{}
	case len(a.UpstreamRouters) > 0:
		return a.UpstreamRouters
	case linksToDefault(a, def):
		return []string{def}
	}
	return []string{}
}

// linksToDefault says whether a router that lists no upstream routers
// links to the default router def: every one does but the default router.
func linksToDefault(a inventory.Agent, def string) bool {
	return def != "" && def != a.UUID && !a.DefaultRouter
}
