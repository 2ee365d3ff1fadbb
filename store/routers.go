package store

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/service"
)

// RouterConfig returns the base router document of an agent: what anyone
// but svcbridge wrote there (RouterObjects are svcbridge's); ErrNotFound
// when the agent has no router.
func (t *Tx) RouterConfig(ctx context.Context, agentUUID string) ([]byte, error) {
	var cfg string
	err := t.get(ctx, &cfg, `SELECT config FROM router_configs WHERE agent_uuid = ?`, agentUUID)
	return []byte(cfg), err
}

// LockRouterConfig reads an agent's base router document and holds the
// whole router's lock (its row's) until the transaction ends: a pass over
// everything the router holds runs alone.
func (t *Tx) LockRouterConfig(ctx context.Context, agentUUID string) ([]byte, error) {
	var cfg string
	err := t.get(ctx, &cfg, `SELECT config FROM router_configs WHERE agent_uuid = ?`+t.forUpdate(), agentUUID)
	return []byte(cfg), err
}

// ShareRouterConfig reads an agent's base router document for a pass over
// one service's objects, holding until the transaction ends the router's
// lock shared and the lock of that service on it: passes of different
// services on one router (a hub during a burst of creates) run at once and
// queue only for the version bump at their end, while a whole-router pass
// (LockRouterConfig) and passes of the same service wait for each other.
// On SQLite, whose writers run one at a time, it is a plain read.
func (t *Tx) ShareRouterConfig(ctx context.Context, agentUUID, service string) ([]byte, error) {
	if t.dialect != Postgres {
		return t.RouterConfig(ctx, agentUUID)
	}
	var cfg string
	// FOR KEY SHARE conflicts with FOR UPDATE only, not with the version
	// bump's UPDATE that each pass makes.
	if err := t.get(ctx, &cfg, `SELECT config FROM router_configs WHERE agent_uuid = ? FOR KEY SHARE`, agentUUID); err != nil {
		return nil, err
	}
	// The two-key form: its keys never meet AllocateBridgePort's one-key lock.
	_, err := t.exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))`, agentUUID, service)
	return []byte(cfg), err
}

// WriteRouterConfig stores a new base router document and raises the
// agent's microserviceConfig flag in the same transaction.
func (t *Tx) WriteRouterConfig(ctx context.Context, agentUUID string, cfg []byte) error {
	n, err := t.exec(ctx, `UPDATE router_configs SET config = ? WHERE agent_uuid = ?`, string(cfg), agentUUID)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return t.RouterChanged(ctx, agentUUID)
}

// RouterChanged records that the document an agent pulls changed: a new
// version (its ETag) and the raised microserviceConfig flag.
func (t *Tx) RouterChanged(ctx context.Context, agentUUID string) error {
	n, err := t.exec(ctx, `UPDATE router_configs SET version = version + 1, updated_at = ? WHERE agent_uuid = ?`, now(), agentUUID)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return t.flagChange(ctx, agentUUID)
}

// RouterVersion names the content of an agent's router document: it
// changes whenever the document does, and costs one row to read.
func (t *Tx) RouterVersion(ctx context.Context, agentUUID string) (string, error) {
	var v struct {
		Version   int64     `db:"version"`
		UpdatedAt time.Time `db:"updated_at"`
	}
	err := t.get(ctx, &v, `SELECT version, updated_at FROM router_configs WHERE agent_uuid = ?`, agentUUID)
	// The time tells a router deleted and made again from the old one.
	return strconv.FormatInt(v.Version, 10) + "-" + strconv.FormatInt(v.UpdatedAt.UnixNano(), 36), err
}

// RouterObjects lists the objects svcbridge holds on an agent's router:
// all of them, or those of one service.
func (t *Tx) RouterObjects(ctx context.Context, agentUUID, service string) ([]routerconfig.Held, error) {
	var rows []struct {
		Kind    string  `db:"kind"`
		Service string  `db:"service_name"`
		Object  *string `db:"object"`
	}
	query, args := `SELECT kind, service_name, object FROM router_entries WHERE agent_uuid = ?`, []any{agentUUID}
	if service != "" {
		// Both kinds named, so that the key's index finds the two rows
		// instead of reading every entry of the router.
		query, args = query+` AND kind IN (?, ?) AND service_name = ?`, append(args, KindListener, KindConnector, service)
	}
	if err := t.sel(ctx, &rows, query+` ORDER BY kind, service_name`, args...); err != nil {
		return nil, err
	}
	out := make([]routerconfig.Held, len(rows))
	for i, r := range rows {
		out[i] = routerconfig.Held{Kind: r.Kind, Service: r.Service}
		if r.Object != nil {
			out[i].JSON = json.RawMessage(*r.Object)
		}
	}
	return out, nil
}

// SetRouterObjects stores objects on an agent's router and drops others:
// rows written or deleted one by one. An object in rewritten ("kind/service")
// was written anew: its written-at time moves and it waits for the agent's
// acknowledgement again; any other keeps its times.
func (t *Tx) SetRouterObjects(ctx context.Context, agentUUID string, write []routerconfig.Held, rewritten map[string]bool, drop []routerconfig.Held) error {
	for _, d := range drop {
		if _, err := t.exec(ctx, `DELETE FROM router_entries WHERE agent_uuid = ? AND kind = ? AND service_name = ?`, agentUUID, d.Kind, d.Service); err != nil {
			return err
		}
	}
	if len(write) == 0 {
		return nil
	}
	ts := now()
	seq, err := t.changeSeq(ctx, agentUUID) // the change this write made visible (distribution.go)
	if err != nil {
		return err
	}
	for _, w := range write {
		var object any
		if w.JSON != nil {
			object = string(w.JSON)
		}
		onConflict := `object = excluded.object`
		if rewritten[w.Kind+"/"+w.Service] {
			onConflict += `, written_at = excluded.written_at, change_seq = excluded.change_seq, acknowledged_at = NULL`
		}
		_, err := t.exec(ctx, `INSERT INTO router_entries (agent_uuid, kind, service_name, written_at, change_seq, object) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (agent_uuid, kind, service_name) DO UPDATE SET `+onConflict, agentUUID, w.Kind, w.Service, ts, seq, object)
		if err != nil {
			return err
		}
	}
	return nil
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
	KindListener  = routerconfig.KindListener
	KindConnector = routerconfig.KindConnector
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

// ListenerServices returns the services an agent's router listens for:
// those its distribution tokens select (every service when all), and
// those placed with their hub listener on it; of them, only the service
// named only when it is not "".
func (t *Tx) ListenerServices(ctx context.Context, agentUUID string, tokens []string, all bool, only string) ([]service.ListenerWant, error) {
	filter, args := "", []any{}
	if only != "" {
		filter, args = ` AND s.name = ?`, []any{only}
	}
	var tagged []service.ListenerWant
	switch {
	case all:
		if err := t.sel(ctx, &tagged, `SELECT s.name, s.bridge_port, 'all' AS reason FROM services s WHERE TRUE`+filter, args...); err != nil {
			return nil, err
		}
	case len(tokens) > 0:
		query, targs, err := t.in(`SELECT s.name, s.bridge_port, MIN(g.tag) AS reason FROM services s
			JOIN service_tags g ON g.service_name = s.name WHERE g.tag IN (?)`+filter+` GROUP BY s.name, s.bridge_port`, append([]any{tokens}, args...)...)
		if err != nil {
			return nil, err
		}
		if err := t.sel(ctx, &tagged, query, targs...); err != nil {
			return nil, err
		}
	}
	var hubbed []service.ListenerWant
	if err := t.sel(ctx, &hubbed, `SELECT s.name, s.bridge_port, '' AS reason FROM services s WHERE s.hub_site = ?`+filter, append([]any{agentUUID}, args...)...); err != nil {
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
// an agent's router; only the service named only when it is not "".
func (t *Tx) ConnectorServices(ctx context.Context, agentUUID, routerMode, only string) ([]service.ConnectorWant, error) {
	var rows []struct {
		Name        string `db:"name"`
		Type        string `db:"type"`
		Resource    string `db:"resource"`
		TargetPort  int    `db:"target_port"`
		Application string `db:"application"`
		MsName      string `db:"ms_name"`
		HostNetwork bool   `db:"host_network_mode"`
	}
	filter, args := "", []any{service.TypeMicroservice, agentUUID}
	if only != "" {
		filter, args = ` AND s.name = ?`, append(args, only)
	}
	err := t.sel(ctx, &rows, `SELECT s.name, s.type, s.resource, s.target_port,
			COALESCE(m.application, '') AS application, COALESCE(m.name, '') AS ms_name,
			COALESCE(m.host_network_mode, FALSE) AS host_network_mode
		FROM services s LEFT JOIN microservices m ON s.type = ? AND m.uuid = s.resource
		WHERE s.connector_site = ?`+filter+`
		ORDER BY s.name`, args...)
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
