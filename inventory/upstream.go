package inventory

import (
	"slices"

	"svcbridge/document"
)

// Upstream is one entry of an agent's upstreamRouters as the client gave
// it (Ref: a name or a uuid) and the agent it names (nil: none does).
type Upstream struct {
	Ref   string
	Agent *Agent
}

// ResolveUpstreams checks a's upstream routers in list order and returns
// them as uuids, the form they are stored in. An agent cannot be its own
// upstream router (named by its name or uuid, even before it exists); each
// must exist and be an interior router, since only those accept router
// connections; none may be listed twice, under any of its names.
func ResolveUpstreams(a Agent, ups []Upstream) ([]string, error) {
	out := make([]string, 0, len(ups))
	for _, up := range ups {
		if up.Ref == a.Name || up.Ref == a.UUID || (up.Agent != nil && up.Agent.UUID == a.UUID) {
			return nil, document.Errorf("Agent %s cannot be its own upstream router", a.Name)
		}
		if up.Agent == nil {
			return nil, document.Errorf("Invalid upstream router '%s': no such agent", up.Ref)
		}
		if !AcceptsRouters(*up.Agent) {
			return nil, document.Errorf("Invalid upstream router '%s': agent %s has routerMode %s, and only interior routers accept connections",
				up.Ref, up.Agent.Name, up.Agent.RouterMode)
		}
		if slices.Contains(out, up.Agent.UUID) {
			return nil, document.Errorf("Upstream router '%s' is listed twice", up.Ref)
		}
		out = append(out, up.Agent.UUID)
	}
	return out, nil
}

// AcceptsRouters reports whether a's router accepts connections from other
// routers, and so can be an upstream router: only interior routers do.
func AcceptsRouters(a Agent) bool { return a.RouterMode == RouterInterior }

// UpstreamUsers names the agents of all that list a as an upstream router.
func UpstreamUsers(a Agent, all []Agent) []string {
	var users []string
	for _, o := range all {
		if slices.Contains(o.UpstreamRouters, a.UUID) {
			users = append(users, o.Name)
		}
	}
	return users
}

// RoutingChanged reports whether a change of an agent from old to a can
// move, reshape or invalidate the objects of the services that depend on
// it: its router mode, host, hub role or upstream routers (connector
// host, hub endpoint, placement, the bridge's reach).
func RoutingChanged(old, a Agent) bool {
	return old.RouterMode != a.RouterMode || old.Host != a.Host || old.DefaultRouter != a.DefaultRouter ||
		!slices.Equal(old.UpstreamRouters, a.UpstreamRouters)
}

// MicroserviceRoutingChanged reports whether a change of a microservice
// from old to m changes its services' connectors: the agent decides which
// router gets them; host network mode, application and name decide the
// connector host ({app}.{name}).
func MicroserviceRoutingChanged(old, m Microservice) bool {
	return m.AgentUUID != old.AgentUUID || m.HostNetworkMode != old.HostNetworkMode ||
		m.Application != old.Application || m.Name != old.Name
}

// LinksChanged reports whether a change of an agent from old to a changes
// how other routers link to its router (service.PlanSite): where they dial
// it (its host, or its name without one), whether it accepts router links
// (its mode), and whether routers without upstream routers link to it (the
// default router). A new agent is a change from the zero Agent.
func LinksChanged(old, a Agent) bool {
	return old.Host != a.Host || old.Name != a.Name || old.RouterMode != a.RouterMode || old.DefaultRouter != a.DefaultRouter
}
