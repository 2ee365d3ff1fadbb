package store

import (
	"context"
	"errors"

	"svcbridge/inventory"
)

// Site is what decides a router's site (service.PlanSite): its agent, the
// agents its upstreamRouters name, in order, and the default router.
type Site struct {
	Agent     inventory.Agent
	Upstreams []inventory.Agent
	Default   *inventory.Agent
}

// RouterSites reads the sites of agents' routers, in a few statements for
// all of them; an agent with no router is not in the map.
func (t *Tx) RouterSites(ctx context.Context, uuids []string) (map[string]Site, error) {
	out := map[string]Site{}
	if len(uuids) == 0 {
		return out, nil
	}
	var agents []inventory.Agent
	query, args, err := t.in(`SELECT `+agentCols+` FROM agents WHERE uuid IN (?) AND router_mode IN (?)`, uuids, inventory.ModesWithRouter())
	if err != nil {
		return nil, err
	}
	if err := t.sel(ctx, &agents, query, args...); err != nil {
		return nil, err
	}
	var ups []struct {
		Downstream string `db:"downstream"`
		inventory.Agent
	}
	query, args, err = t.in(`SELECT u.agent_uuid AS downstream, a.uuid, a.name, a.host, a.router_mode, a.default_router, a.created_at, a.updated_at
		FROM agent_upstreams u JOIN agents a ON a.uuid = u.upstream_uuid WHERE u.agent_uuid IN (?) ORDER BY u.agent_uuid, u.position`, uuids)
	if err != nil {
		return nil, err
	}
	if err := t.sel(ctx, &ups, query, args...); err != nil {
		return nil, err
	}
	var def *inventory.Agent
	if d, err := t.DefaultRouter(ctx); err == nil {
		def = &d
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	upstreams := map[string][]inventory.Agent{}
	for _, u := range ups {
		upstreams[u.Downstream] = append(upstreams[u.Downstream], u.Agent)
	}
	for _, a := range agents {
		a.UpstreamRouters = make([]string, 0, len(upstreams[a.UUID]))
		for _, u := range upstreams[a.UUID] {
			a.UpstreamRouters = append(a.UpstreamRouters, u.UUID)
		}
		out[a.UUID] = Site{Agent: a, Upstreams: upstreams[a.UUID], Default: def}
	}
	return out, nil
}

// AgentsLinkingTo lists the agents whose routers link to agent uuid's: those
// that name it among their upstream routers and, when it is the default
// router (isDefault), those with a router that name none.
func (t *Tx) AgentsLinkingTo(ctx context.Context, uuid string, isDefault bool) ([]string, error) {
	query, args, err := t.in(`SELECT agent_uuid FROM agent_upstreams WHERE upstream_uuid = ?
		UNION SELECT a.uuid FROM agents a WHERE ? AND a.uuid <> ? AND a.router_mode IN (?)
			AND NOT EXISTS (SELECT 1 FROM agent_upstreams u WHERE u.agent_uuid = a.uuid)`,
		uuid, isDefault, uuid, inventory.ModesWithRouter())
	if err != nil {
		return nil, err
	}
	var out []string
	return out, t.sel(ctx, &out, query, args...)
}
