package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// Router is what a pass over an agent's router starts from: its base
// document and what of the agent decides the objects it holds.
type Router struct {
	Base       []byte `db:"config"`
	Name       string `db:"name"`
	RouterMode string `db:"router_mode"`
	Tags       []string
}

// LockRouter reads an agent's router and holds the whole router's lock
// (its row's) until the transaction ends: a pass over everything the
// router holds runs alone. ErrNotFound when the agent has no router.
func (t *Tx) LockRouter(ctx context.Context, agentUUID string) (Router, error) {
	return t.router(ctx, agentUUID, t.forUpdate("c"))
}

// ShareRouter reads an agent's router for a pass over one service's
// objects, holding until the transaction ends the router's lock shared
// and the lock of that service on it: passes of different services on one
// router (a hub during a burst of creates) run at once and queue only for
// the version bump at their end (WriteRouter), while a whole-router pass
// (LockRouter) and passes of the same service wait for each other. On
// SQLite, whose writers run one at a time, it is a plain read.
func (t *Tx) ShareRouter(ctx context.Context, agentUUID, service string) (Router, error) {
	if t.dialect != Postgres {
		return t.router(ctx, agentUUID, "")
	}
	// FOR KEY SHARE conflicts with FOR UPDATE only, not with the version
	// bump's UPDATE that each pass makes.
	r, err := t.router(ctx, agentUUID, ` FOR KEY SHARE OF c`)
	if err != nil {
		return r, err
	}
	// The two-key form: its keys never meet AllocateBridgePort's one-key lock.
	_, err = t.exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))`, agentUUID, service)
	return r, err
}

// router reads an agent's router with the row lock lock takes.
func (t *Tx) router(ctx context.Context, agentUUID, lock string) (Router, error) {
	var r Router
	if err := t.get(ctx, &r, `SELECT c.config, a.name, a.router_mode FROM router_configs c
		JOIN agents a ON a.uuid = c.agent_uuid WHERE c.agent_uuid = ?`+lock, agentUUID); err != nil {
		return r, err
	}
	err := t.sel(ctx, &r.Tags, `SELECT tag FROM agent_tags WHERE agent_uuid = ? ORDER BY position`, agentUUID)
	return r, err
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
	const cols = `SELECT kind, service_name, object FROM router_entries WHERE agent_uuid = ?`
	query, args := cols+` ORDER BY kind, service_name`, []any{agentUUID}
	if service != "" {
		// Two lookups of the whole key: with kind IN (...) PostgreSQL reads
		// every entry of the router's key range, a cost that grows with
		// the services the router holds.
		query = cols + ` AND kind = ? AND service_name = ? UNION ALL ` + cols + ` AND kind = ? AND service_name = ?`
		args = []any{agentUUID, KindConnector, service, agentUUID, KindListener, service}
	}
	if err := t.sel(ctx, &rows, query, args...); err != nil {
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

// RouterWrite is what one pass changes on an agent's router.
type RouterWrite struct {
	// Base is the new base document; nil leaves it as it is.
	Base []byte
	// Write are the objects to store, Drop those to remove (Kind and
	// Service). An object in Rewritten ("kind/service") is written anew:
	// its written-at time moves and it waits for the agent's
	// acknowledgement again; any other keeps its times.
	Write     []routerconfig.Held
	Rewritten map[string]bool
	Drop      []routerconfig.Held
	// Changed: the document the agent pulls changes (as it does with a
	// new Base), so it gets a new version, its ETag, and the agent's
	// microserviceConfig flag is raised.
	Changed bool
}

// WriteRouter stores what a pass changes on an agent's router;
// ErrNotFound when a change finds no router. A change takes the router's
// row lock, which numbers the agent's changes in commit order, with its
// last statements but one: passes of other services on the router (a
// hub during a burst of creates) wait for each other only from there to
// their commit.
func (t *Tx) WriteRouter(ctx context.Context, agentUUID string, w RouterWrite) error {
	for _, d := range w.Drop {
		if _, err := t.exec(ctx, `DELETE FROM router_entries WHERE agent_uuid = ? AND kind = ? AND service_name = ?`, agentUUID, d.Kind, d.Service); err != nil {
			return err
		}
	}
	var seq int64 // the change that makes the writes visible (distribution.go)
	var err error
	switch {
	case w.Changed || w.Base != nil:
		seq, err = t.routerChanged(ctx, agentUUID, w.Base)
	case len(w.Write) > 0:
		seq, err = t.changeSeq(ctx, agentUUID)
	}
	if err != nil {
		return err
	}
	var rewritten, kept []routerconfig.Held
	for _, h := range w.Write {
		if w.Rewritten[h.Kind+"/"+h.Service] {
			rewritten = append(rewritten, h)
		} else {
			kept = append(kept, h)
		}
	}
	if err := t.upsertEntries(ctx, agentUUID, seq, rewritten, `, written_at = excluded.written_at, change_seq = excluded.change_seq, acknowledged_at = NULL`); err != nil {
		return err
	}
	return t.upsertEntries(ctx, agentUUID, seq, kept, ``)
}

// entriesPerInsert bounds the rows of one INSERT (six arguments each,
// within both databases' limits).
const entriesPerInsert = 500

// upsertEntries stores objects as router entries written now by change
// seq, a statement per entriesPerInsert; an entry that exists keeps its
// times unless onConflict sets them.
func (t *Tx) upsertEntries(ctx context.Context, agentUUID string, seq int64, objects []routerconfig.Held, onConflict string) error {
	ts := now()
	for chunk := range slices.Chunk(objects, entriesPerInsert) {
		var values strings.Builder
		args := make([]any, 0, 6*len(chunk))
		for i, h := range chunk {
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?, ?, ?, ?, ?)")
			var object any
			if h.JSON != nil {
				object = string(h.JSON)
			}
			args = append(args, agentUUID, h.Kind, h.Service, ts, seq, object)
		}
		if _, err := t.exec(ctx, `INSERT INTO router_entries (agent_uuid, kind, service_name, written_at, change_seq, object) VALUES `+values.String()+`
			ON CONFLICT (agent_uuid, kind, service_name) DO UPDATE SET object = excluded.object`+onConflict, args...); err != nil {
			return err
		}
	}
	return nil
}

// routerChanged records that the document an agent pulls changed (and
// stores base unless nil): a new version (its ETag) and the raised
// microserviceConfig flag. It returns the change's sequence.
func (t *Tx) routerChanged(ctx context.Context, agentUUID string, base []byte) (int64, error) {
	t.touch(changeVersions, agentUUID)
	var config *string
	if base != nil {
		s := string(base)
		config = &s
	}
	const bump = `UPDATE router_configs SET version = version + 1, updated_at = ?, config = COALESCE(?, config) WHERE agent_uuid = ?`
	if t.dialect == Postgres {
		// One statement, which also learns the transaction's id for the
		// commit (see Store.inTx): the row lock it takes is held for one
		// round trip less each.
		var r struct {
			Seq int64 `db:"last_updated"`
			XID int64 `db:"xid"`
		}
		err := t.get(ctx, &r, `WITH bumped AS (`+bump+` RETURNING agent_uuid)
			INSERT INTO agent_changes (agent_uuid, microservice_config, last_updated) SELECT agent_uuid, TRUE, ? FROM bumped
			`+raiseFlag+` RETURNING last_updated, txid_current() AS xid`, now(), config, agentUUID, time.Now().UnixMilli())
		t.xid = r.XID
		return r.Seq, err
	}
	n, err := t.exec(ctx, bump, now(), config, agentUUID)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, ErrNotFound
	}
	return t.flagChange(ctx, agentUUID)
}

// raiseFlag raises microserviceConfig with a lastUpdated strictly greater
// than any the agent has seen, so an acknowledgement of an older change
// never clears a newer one.
const raiseFlag = `ON CONFLICT (agent_uuid) DO UPDATE SET microservice_config = TRUE,
	last_updated = CASE WHEN agent_changes.last_updated >= excluded.last_updated
		THEN agent_changes.last_updated + 1 ELSE excluded.last_updated END`

// flagChange raises an agent's microserviceConfig flag (raiseFlag) and
// returns its new lastUpdated.
func (t *Tx) flagChange(ctx context.Context, agentUUID string) (int64, error) {
	t.touch(changeVersions, agentUUID)
	var seq int64
	err := t.get(ctx, &seq, `INSERT INTO agent_changes (agent_uuid, microservice_config, last_updated) VALUES (?, TRUE, ?)
		`+raiseFlag+` RETURNING last_updated`, agentUUID, time.Now().UnixMilli())
	return seq, err
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
	t.touch(changeVersions, agentUUID)
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
