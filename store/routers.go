package store

import (
	"context"
	"errors"
	"sort"
	"time"

	"svcbridge/service"
)

// RouterConfig returns the router config document of an agent; ErrNotFound
// when the agent has no router.
func (t *Tx) RouterConfig(ctx context.Context, agentUUID string) ([]byte, error) {
	var cfg string
	err := t.get(ctx, &cfg, `SELECT config FROM router_configs WHERE agent_uuid = ?`, agentUUID)
	return []byte(cfg), err
}

// LockRouterConfig reads an agent's router config and holds its row lock
// (the hub lock) until the transaction ends, so concurrent writers of one
// router queue instead of losing each other's entries.
func (t *Tx) LockRouterConfig(ctx context.Context, agentUUID string) ([]byte, error) {
	var cfg string
	err := t.get(ctx, &cfg, `SELECT config FROM router_configs WHERE agent_uuid = ?`+t.forUpdate(), agentUUID)
	return []byte(cfg), err
}

// WriteRouterConfig stores a new router config and raises the agent's
// microserviceConfig flag in the same transaction.
func (t *Tx) WriteRouterConfig(ctx context.Context, agentUUID string, cfg []byte) error {
	n, err := t.exec(ctx, `UPDATE router_configs SET config = ?, version = version + 1, updated_at = ? WHERE agent_uuid = ?`,
		string(cfg), now(), agentUUID)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return t.flagChange(ctx, agentUUID)
}

// flagChange raises microserviceConfig with a lastUpdated strictly greater
// than any the agent has seen, so an acknowledgement of an older change
// never clears a newer one.
func (t *Tx) flagChange(ctx context.Context, agentUUID string) error {
	ts := time.Now().UnixMilli()
	_, err := t.exec(ctx, `INSERT INTO agent_changes (agent_uuid, microservice_config, last_updated) VALUES (?, TRUE, ?)
		ON CONFLICT (agent_uuid) DO UPDATE SET microservice_config = TRUE,
			last_updated = CASE WHEN agent_changes.last_updated >= excluded.last_updated
				THEN agent_changes.last_updated + 1 ELSE excluded.last_updated END`, agentUUID, ts)
	return err
}

// Changes is what an agent pulls from /api/v3/agent/config/changes.
type Changes struct {
	MicroserviceConfig bool  `json:"microserviceConfig" db:"microservice_config"`
	LastUpdated        int64 `json:"lastUpdated" db:"last_updated"`
	Acknowledged       int64 `json:"-" db:"acknowledged"`
}

// AgentChanges returns an agent's change flags.
func (t *Tx) AgentChanges(ctx context.Context, agentUUID string) (Changes, error) {
	var c Changes
	err := t.get(ctx, &c, `SELECT microservice_config, last_updated, acknowledged FROM agent_changes WHERE agent_uuid = ?`, agentUUID)
	if errors.Is(err, ErrNotFound) {
		return Changes{}, nil
	}
	return c, err
}

// AckChanges clears the flags of changes up to lastUpdated; a newer change
// keeps its flag.
func (t *Tx) AckChanges(ctx context.Context, agentUUID string, lastUpdated int64) error {
	_, err := t.exec(ctx, `UPDATE agent_changes SET
			microservice_config = CASE WHEN last_updated <= ? THEN FALSE ELSE microservice_config END,
			acknowledged = CASE WHEN acknowledged < ? THEN ? ELSE acknowledged END
		WHERE agent_uuid = ?`, lastUpdated, lastUpdated, lastUpdated, agentUUID)
	if err != nil {
		return err
	}
	return t.stampAcknowledged(ctx, agentUUID, lastUpdated) // distribution.go
}

// Entry is one object svcbridge wrote into a router config.
type Entry struct {
	Agent     string    `db:"agent_uuid" json:"agent"`
	Kind      string    `db:"kind" json:"kind"`
	Service   string    `db:"service_name" json:"service"`
	WrittenAt time.Time `db:"written_at" json:"writtenAt"`
}

// Entry kinds.
const (
	KindListener  = "listener"
	KindConnector = "connector"
)

// AgentEntries lists what svcbridge wrote into an agent's router config.
func (t *Tx) AgentEntries(ctx context.Context, agentUUID string) ([]Entry, error) {
	var es []Entry
	return es, t.sel(ctx, &es, `SELECT agent_uuid, kind, service_name, written_at FROM router_entries WHERE agent_uuid = ? ORDER BY kind, service_name`, agentUUID)
}

// ServiceEntries lists where svcbridge wrote a service's objects.
func (t *Tx) ServiceEntries(ctx context.Context, service string) ([]Entry, error) {
	var es []Entry
	return es, t.sel(ctx, &es, `SELECT agent_uuid, kind, service_name, written_at FROM router_entries WHERE service_name = ? ORDER BY agent_uuid, kind`, service)
}

// SetAgentEntries makes the recorded entries of an agent equal want.
// Entries in changed (written anew) get a new written_at; others keep theirs.
func (t *Tx) SetAgentEntries(ctx context.Context, agentUUID string, want []Entry, changed map[Entry]bool) error {
	have, err := t.AgentEntries(ctx, agentUUID)
	if err != nil {
		return err
	}
	key := func(e Entry) Entry { return Entry{Agent: agentUUID, Kind: e.Kind, Service: e.Service} }
	wanted := make(map[Entry]bool, len(want))
	for _, e := range want {
		wanted[key(e)] = true
	}
	had := make(map[Entry]bool, len(have))
	for _, e := range have {
		k := key(e)
		had[k] = true
		if !wanted[k] {
			if _, err := t.exec(ctx, `DELETE FROM router_entries WHERE agent_uuid = ? AND kind = ? AND service_name = ?`, agentUUID, e.Kind, e.Service); err != nil {
				return err
			}
		}
	}
	ts := now()
	seq, err := t.changeSeq(ctx, agentUUID) // the change this write made visible (distribution.go)
	if err != nil {
		return err
	}
	for k := range wanted {
		switch {
		case !had[k]:
			_, err = t.exec(ctx, `INSERT INTO router_entries (agent_uuid, kind, service_name, written_at, change_seq) VALUES (?, ?, ?, ?, ?)`, agentUUID, k.Kind, k.Service, ts, seq)
		case changed[k]:
			_, err = t.exec(ctx, `UPDATE router_entries SET written_at = ?, change_seq = ?, acknowledged_at = NULL WHERE agent_uuid = ? AND kind = ? AND service_name = ?`, ts, seq, agentUUID, k.Kind, k.Service)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ListenerServices returns the services an agent's router listens for:
// those its distribution tokens select (every service when all), and
// those placed with their hub listener on it.
func (t *Tx) ListenerServices(ctx context.Context, agentUUID string, tokens []string, all bool) ([]service.ListenerWant, error) {
	var tagged []service.ListenerWant
	switch {
	case all:
		if err := t.sel(ctx, &tagged, `SELECT name, bridge_port, 'all' AS reason FROM services`); err != nil {
			return nil, err
		}
	case len(tokens) > 0:
		query, args, err := t.in(`SELECT s.name, s.bridge_port, MIN(g.tag) AS reason FROM services s
			JOIN service_tags g ON g.service_name = s.name WHERE g.tag IN (?) GROUP BY s.name, s.bridge_port`, tokens)
		if err != nil {
			return nil, err
		}
		if err := t.sel(ctx, &tagged, query, args...); err != nil {
			return nil, err
		}
	}
	var hubbed []service.ListenerWant
	if err := t.sel(ctx, &hubbed, `SELECT name, bridge_port, '' AS reason FROM services WHERE hub_site = ?`, agentUUID); err != nil {
		return nil, err
	}
	return mergeListeners(tagged, hubbed), nil
}

// mergeListeners joins both lists by service, sorted; a tag reason wins
// over the hub, and the hub is spelled out.
func mergeListeners(tagged, hubbed []service.ListenerWant) []service.ListenerWant {
	by := make(map[string]service.ListenerWant, len(tagged)+len(hubbed))
	for _, l := range hubbed {
		l.Reason = service.ReasonHub
		by[l.Service] = l
	}
	for _, l := range tagged {
		by[l.Service] = l
	}
	out := make([]service.ListenerWant, 0, len(by))
	for _, l := range by {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}

// ConnectorServices returns the services placed with their connector on
// an agent's router.
func (t *Tx) ConnectorServices(ctx context.Context, agentUUID, routerMode string) ([]service.ConnectorWant, error) {
	var rows []struct {
		Name        string `db:"name"`
		Type        string `db:"type"`
		Resource    string `db:"resource"`
		TargetPort  int    `db:"target_port"`
		Application string `db:"application"`
		MsName      string `db:"ms_name"`
		HostNetwork bool   `db:"host_network_mode"`
	}
	err := t.sel(ctx, &rows, `SELECT s.name, s.type, s.resource, s.target_port,
			COALESCE(m.application, '') AS application, COALESCE(m.name, '') AS ms_name,
			COALESCE(m.host_network_mode, FALSE) AS host_network_mode
		FROM services s LEFT JOIN microservices m ON s.type = ? AND m.uuid = s.resource
		WHERE s.connector_site = ?
		ORDER BY s.name`, service.TypeMicroservice, agentUUID)
	if err != nil {
		return nil, err
	}
	out := make([]service.ConnectorWant, len(rows))
	for i, r := range rows {
		out[i] = service.ConnectorWant{Service: r.Name, TargetPort: r.TargetPort, Backend: service.Backend{
			Type: r.Type, Resource: r.Resource, RouterMode: routerMode,
			Application: r.Application, Microservice: r.MsName, HostNetwork: r.HostNetwork}}
	}
	return out, nil
}
