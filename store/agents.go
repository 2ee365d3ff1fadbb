package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/service"
)

// Agent-related constraint names (see the migrations).
const (
	AgentNameKey          = "agents_name_key"
	AgentUUIDKey          = "agents_uuid_key"
	AgentDefaultRouterKey = "agents_default_router_key"
)

const agentCols = `uuid, name, host, router_mode, default_router, created_at, updated_at`

// ListAgents returns every agent, sorted by name.
func (t *Tx) ListAgents(ctx context.Context) ([]inventory.Agent, error) {
	var agents []inventory.Agent
	if err := t.sel(ctx, &agents, `SELECT `+agentCols+` FROM agents ORDER BY `+t.binary("name")); err != nil {
		return nil, err
	}
	return agents, t.fillAgents(ctx, agents)
}

// ListAgentsIn lists the agents of uuids (those that exist), by name.
func (t *Tx) ListAgentsIn(ctx context.Context, uuids []string) ([]inventory.Agent, error) {
	agents, err := selIn[inventory.Agent](ctx, t, `SELECT `+agentCols+` FROM agents WHERE uuid IN (?)`, uuids)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(agents, func(a, b inventory.Agent) int { return strings.Compare(a.Name, b.Name) }) // byte order, as binary("name")
	return agents, t.fillAgents(ctx, agents)
}

// GetAgent finds an agent by name, else by uuid.
func (t *Tx) GetAgent(ctx context.Context, nameOrUUID string) (inventory.Agent, error) {
	return nameElseUUID(func(cond string) (inventory.Agent, error) { return t.agentWhere(ctx, cond, nameOrUUID) })
}

// AgentUUID turns a reference to an agent, its name or else its uuid, into
// its uuid.
func (t *Tx) AgentUUID(ctx context.Context, nameOrUUID string) (string, error) {
	return nameElseUUID(func(cond string) (uuid string, err error) {
		return uuid, t.get(ctx, &uuid, `SELECT uuid FROM agents WHERE `+cond, nameOrUUID)
	})
}

// nameElseUUID is what read, given a condition on agents whose one
// parameter is a reference, reads of the agent the reference names: the
// agent of that name, else the one with that uuid.
func nameElseUUID[T any](read func(cond string) (T, error)) (T, error) {
	v, err := read(`name = ?`)
	if errors.Is(err, ErrNotFound) {
		v, err = read(`uuid = ?`)
	}
	return v, err
}

// AgentByTokenHash finds the agent a credential belongs to.
func (t *Tx) AgentByTokenHash(ctx context.Context, hash string) (inventory.Agent, error) {
	var a inventory.Agent
	err := t.get(ctx, &a, `SELECT `+agentCols+` FROM agents WHERE token_hash = ?`, hash)
	return a, err
}

// SetAgentTokenHash replaces the credential of an agent read in this
// transaction, revoking the old one.
func (t *Tx) SetAgentTokenHash(ctx context.Context, uuid, hash string) error {
	t.touch(changeAgent, uuid)
	return t.updateRead(ctx, `UPDATE agents SET token_hash = ?, updated_at = ? WHERE uuid = ?`, hash, now(), uuid)
}

// DefaultRouter returns the hub agent of the remote control plane.
func (t *Tx) DefaultRouter(ctx context.Context) (inventory.Agent, error) {
	return t.defaultRouter(ctx, "")
}

// defaultRouter is DefaultRouter read with lock (a row lock clause).
func (t *Tx) defaultRouter(ctx context.Context, lock string) (inventory.Agent, error) {
	var a inventory.Agent
	err := t.get(ctx, &a, `SELECT `+agentCols+` FROM agents WHERE default_router`+lock)
	return a, err
}

// fillAgents loads tags and upstream routers, in their stored order.
func (t *Tx) fillAgents(ctx context.Context, agents []inventory.Agent) error {
	if len(agents) == 0 {
		return nil
	}
	idx := make(map[string]int, len(agents))
	uuids := make([]string, len(agents))
	for i := range agents {
		idx[agents[i].UUID] = i
		uuids[i] = agents[i].UUID
		agents[i].Tags = []string{}
		agents[i].UpstreamRouters = []string{}
	}
	type row struct {
		Agent string `db:"agent_uuid"`
		Value string `db:"value"`
	}
	for _, q := range []struct {
		query string
		add   func(*inventory.Agent, string)
	}{
		{`SELECT agent_uuid, tag AS value FROM agent_tags WHERE agent_uuid IN (?) ORDER BY agent_uuid, position`,
			func(a *inventory.Agent, v string) { a.Tags = append(a.Tags, v) }},
		{`SELECT agent_uuid, upstream_uuid AS value FROM agent_upstreams WHERE agent_uuid IN (?) ORDER BY agent_uuid, position`,
			func(a *inventory.Agent, v string) { a.UpstreamRouters = append(a.UpstreamRouters, v) }},
	} {
		rows, err := selIn[row](ctx, t, q.query, uuids)
		if err != nil {
			return err
		}
		for _, r := range rows {
			q.add(&agents[idx[r.Agent]], r.Value)
		}
	}
	return nil
}

// CreateAgent inserts an agent with the hash of its credential; one with a
// router gets an empty router config and a change flag.
func (t *Tx) CreateAgent(ctx context.Context, a *inventory.Agent, tokenHash string) error {
	a.CreatedAt, a.UpdatedAt = now(), now()
	t.touch(changeAgent, a.UUID)
	if _, err := t.exec(ctx, `INSERT INTO agents (`+agentCols+`, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		a.UUID, a.Name, a.Host, a.RouterMode, a.DefaultRouter, a.CreatedAt, a.UpdatedAt, tokenHash); err != nil {
		return err
	}
	if err := t.setAgentLists(ctx, *a); err != nil {
		return err
	}
	return t.syncRouterPresence(ctx, *a)
}

// UpdateAgent writes every field of a, read in this transaction.
func (t *Tx) UpdateAgent(ctx context.Context, a *inventory.Agent) error {
	a.UpdatedAt = now()
	t.touch(changeAgent, a.UUID)
	if err := t.updateRead(ctx, `UPDATE agents SET name = ?, host = ?, router_mode = ?, default_router = ?, updated_at = ? WHERE uuid = ?`,
		a.Name, a.Host, a.RouterMode, a.DefaultRouter, a.UpdatedAt, a.UUID); err != nil {
		return err
	}
	if _, err := t.exec(ctx, `DELETE FROM agent_tags WHERE agent_uuid = ?`, a.UUID); err != nil {
		return err
	}
	if _, err := t.exec(ctx, `DELETE FROM agent_upstreams WHERE agent_uuid = ?`, a.UUID); err != nil {
		return err
	}
	if err := t.setAgentLists(ctx, *a); err != nil {
		return err
	}
	return t.syncRouterPresence(ctx, *a)
}

func (t *Tx) setAgentLists(ctx context.Context, a inventory.Agent) error {
	for i, tag := range a.Tags {
		if _, err := t.exec(ctx, `INSERT INTO agent_tags (agent_uuid, position, tag) VALUES (?, ?, ?)`, a.UUID, i, tag); err != nil {
			return err
		}
	}
	for i, up := range a.UpstreamRouters {
		if _, err := t.exec(ctx, `INSERT INTO agent_upstreams (agent_uuid, position, upstream_uuid) VALUES (?, ?, ?)`, a.UUID, i, up); err != nil {
			return err
		}
	}
	return nil
}

// syncRouterPresence gives an agent with a router a config (kept if it has
// one) with the router's site as it is now (service.PlanSite: its id,
// mode and links), and takes it away, with what svcbridge recorded there,
// from an agent without.
func (t *Tx) syncRouterPresence(ctx context.Context, a inventory.Agent) error {
	t.touch(changeVersions, a.UUID)
	if !a.HasRouter() {
		if _, err := t.exec(ctx, `DELETE FROM router_entries WHERE agent_uuid = ?`, a.UUID); err != nil {
			return err
		}
		_, err := t.exec(ctx, `DELETE FROM router_configs WHERE agent_uuid = ?`, a.UUID)
		return err
	}
	if _, err := t.exec(ctx, `INSERT INTO router_configs (agent_uuid, config, version, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent_uuid) DO NOTHING`, a.UUID, routerconfig.Empty, now()); err != nil {
		return err
	}
	return t.writeSite(ctx, a.UUID)
}

// writeSite writes an agent's router site into its document when it
// changed, as a change the agent pulls. A document that is not JSON is
// left to the reconcile, which reports it.
func (t *Tx) writeSite(ctx context.Context, uuid string) error {
	sites, err := t.RouterSites(ctx, []string{uuid})
	if err != nil {
		return err
	}
	st, ok := sites[uuid]
	if !ok {
		return nil
	}
	base, err := t.RouterConfig(ctx, uuid)
	if err != nil {
		return err
	}
	doc, changed, err := routerconfig.WithSite(base, service.PlanSite(st.Agent, st.Upstreams, st.Default))
	if err != nil || !changed {
		return nil
	}
	_, err = t.routersChanged(ctx, map[string][]byte{uuid: doc}, nil)
	return err
}

// AgentReferences says what still refers to an agent, for a clear refusal
// to delete it. Empty means it can go.
func (t *Tx) AgentReferences(ctx context.Context, a inventory.Agent) ([]string, error) {
	var refs []string
	var names []string
	if err := t.sel(ctx, &names, `SELECT application || '/' || name FROM microservices WHERE agent_uuid = ? ORDER BY 1`, a.UUID); err != nil {
		return nil, err
	}
	if len(names) > 0 {
		refs = append(refs, "it runs microservices "+strings.Join(names, ", "))
	}
	names = nil
	if err := t.sel(ctx, &names, `SELECT name FROM services WHERE (type = ? AND resource = ?) OR bridge_agent = ? ORDER BY name`,
		service.TypeAgent, a.UUID, a.UUID); err != nil {
		return nil, err
	}
	if len(names) > 0 {
		refs = append(refs, "services "+strings.Join(names, ", ")+" use it as backend or bridge")
	}
	names = nil
	if err := t.sel(ctx, &names, `SELECT a.name FROM agent_upstreams u JOIN agents a ON a.uuid = u.agent_uuid WHERE u.upstream_uuid = ? ORDER BY a.name`, a.UUID); err != nil {
		return nil, err
	}
	if len(names) > 0 {
		refs = append(refs, "agents "+strings.Join(names, ", ")+" use it as upstream router")
	}
	if a.DefaultRouter {
		var n int
		if err := t.get(ctx, &n, `SELECT COUNT(*) FROM services WHERE on_default_router`); err != nil {
			return nil, err
		}
		if n > 0 {
			refs = append(refs, fmt.Sprintf("it is the default router of %d services", n))
		}
	}
	return refs, nil
}

// DeleteAgent removes an agent and its router config.
func (t *Tx) DeleteAgent(ctx context.Context, uuid string) error {
	t.touch(changeAgent, uuid)
	n, err := t.exec(ctx, `DELETE FROM agents WHERE uuid = ?`, uuid)
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// AgentByUUID finds an agent by uuid only.
func (t *Tx) AgentByUUID(ctx context.Context, uuid string) (inventory.Agent, error) {
	return t.agentWhere(ctx, `uuid = ?`, uuid)
}

// agentWhere reads the agent that cond (on agents, with arg its one
// parameter) selects, with its lists in one statement where fillAgents
// takes three for any number: a service's GET, a pass and an agent's GET
// read one agent.
func (t *Tx) agentWhere(ctx context.Context, cond string, arg any) (inventory.Agent, error) {
	var r struct {
		inventory.Agent
		TagList      []byte `db:"tags"`
		UpstreamList []byte `db:"upstreams"`
	}
	err := t.get(ctx, &r, `SELECT `+agentCols+`, `+t.tagsOf("agent_tags", "agent_uuid", "agents.uuid")+` AS tags, `+
		t.listOf("agent_upstreams", "agent_uuid", "agents.uuid", "upstream_uuid")+` AS upstreams FROM agents WHERE `+cond, arg)
	if err != nil {
		return inventory.Agent{}, err
	}
	a := r.Agent
	if err := json.Unmarshal(r.TagList, &a.Tags); err != nil {
		return a, fmt.Errorf("agent %s: its tags: %w", a.UUID, err)
	}
	if err := json.Unmarshal(r.UpstreamList, &a.UpstreamRouters); err != nil {
		return a, fmt.Errorf("agent %s: its upstream routers: %w", a.UUID, err)
	}
	return a, nil
}

// AgentsWithTags returns the uuids of agents with a router that carry any
// of tags, sorted.
func (t *Tx) AgentsWithTags(ctx context.Context, tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	query, args, err := t.in(`SELECT DISTINCT g.agent_uuid FROM agent_tags g JOIN agents a ON a.uuid = g.agent_uuid
		WHERE g.tag IN (?) AND a.router_mode IN (?) ORDER BY g.agent_uuid`, tags, inventory.ModesWithRouter())
	if err != nil {
		return nil, err
	}
	var uuids []string
	return uuids, t.sel(ctx, &uuids, query, args...)
}

// ServicesDependingOn names the services whose placement depends on an
// agent, as their stored placement says: placed on it, backed by it,
// bridged through it, and, when it is (or was) the default router, every
// service that follows the default router.
func (t *Tx) ServicesDependingOn(ctx context.Context, uuid string, defaultRouter bool) ([]string, error) {
	var names []string
	err := t.sel(ctx, &names, `SELECT name FROM services
		WHERE connector_site = ? OR hub_site = ? OR backend_agent = ? OR bridge_agent = ? OR (? AND on_default_router)
		ORDER BY name`, uuid, uuid, uuid, uuid, defaultRouter)
	return names, err
}
