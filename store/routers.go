package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	Base       []byte   `db:"config"`
	Name       string   `db:"name"`
	RouterMode string   `db:"router_mode"`
	Tags       []string `db:"-"`
}

// LockRouters reads agents' routers and holds each whole router's lock
// (its row's) until the transaction ends, so that a pass over everything
// a router holds runs alone. It reads them in one statement and takes
// the locks in uuid order, so that batches never wait on each other in a
// cycle; an agent with no router is not in the map.
func (t *Tx) LockRouters(ctx context.Context, agentUUIDs []string) (map[string]Router, error) {
	return t.routers(ctx, agentUUIDs, t.forUpdate("c"), "")
}

// ShareRouter reads an agent's router for a pass over one service's
// objects, holding until the transaction ends the router's lock shared
// and the lock of that service on it: passes of different services on one
// router (a hub during a burst of creates) run at once and queue only for
// the version bump at their end (WriteRouter), while a whole-router pass
// (LockRouters) and passes of the same service wait for each other. On
// SQLite, whose writers run one at a time, it is a plain read.
func (t *Tx) ShareRouter(ctx context.Context, agentUUID, service string) (Router, error) {
	if t.dialect != Postgres {
		return t.router(ctx, agentUUID, "", "")
	}
	// FOR KEY SHARE conflicts with FOR UPDATE only, not with the version
	// bump's UPDATE that each pass makes. The service's lock is taken as
	// the row is read, before its row lock: no pass takes them the other
	// way round, and a whole-router pass takes none.
	return t.router(ctx, agentUUID, ` FOR KEY SHARE OF c`, service)
}

// router reads an agent's router as routers does.
func (t *Tx) router(ctx context.Context, agentUUID, lock, service string) (Router, error) {
	rs, err := t.routers(ctx, []string{agentUUID}, lock, service)
	r, ok := rs[agentUUID]
	if err == nil && !ok {
		err = ErrNotFound
	}
	return r, err
}

// routers reads agents' routers with their tags, in uuid order, with the
// row locks lock takes and, when service is set (PostgreSQL), the lock of
// that service on each router.
func (t *Tx) routers(ctx context.Context, agentUUIDs []string, lock, service string) (map[string]Router, error) {
	out := make(map[string]Router, len(agentUUIDs))
	if len(agentUUIDs) == 0 {
		return out, nil
	}
	cols := `c.agent_uuid, c.config, a.name, a.router_mode, ` + t.tagsOf("agent_tags", "agent_uuid", "c.agent_uuid") + ` AS tags`
	var args []any
	if service != "" {
		// The two-key form: its keys never meet AllocateBridgePort's one-key lock.
		cols += `, pg_advisory_xact_lock(hashtext(c.agent_uuid), hashtext(?)) IS NULL AS locked`
		args = append(args, service)
	}
	query, args, err := t.in(`SELECT `+cols+` FROM router_configs c
		JOIN agents a ON a.uuid = c.agent_uuid WHERE c.agent_uuid IN (?) ORDER BY c.agent_uuid`+lock, append(args, agentUUIDs)...)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Agent string `db:"agent_uuid"`
		Router
		TagList []byte `db:"tags"`
		Locked  bool   `db:"locked"`
	}
	if err := t.sel(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := json.Unmarshal(r.TagList, &r.Router.Tags); err != nil {
			return nil, fmt.Errorf("agent %s: its tags: %w", r.Agent, err)
		}
		out[r.Agent] = r.Router
	}
	return out, nil
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
	if service == "" {
		all, err := t.RoutersObjects(ctx, []string{agentUUID})
		return all[agentUUID], err
	}
	// Two lookups of the whole key: with kind IN (...) PostgreSQL reads
	// every entry of the router's key range, a cost that grows with the
	// services the router holds.
	const cols = `SELECT agent_uuid, kind, service_name, object FROM router_entries WHERE agent_uuid = ?`
	one, err := t.heldObjects(ctx, cols+` AND kind = ? AND service_name = ? UNION ALL `+cols+` AND kind = ? AND service_name = ?`,
		agentUUID, KindConnector, service, agentUUID, KindListener, service)
	return one[agentUUID], err
}

// RoutersObjects lists all the objects svcbridge holds on agents' routers,
// by agent, in one statement.
func (t *Tx) RoutersObjects(ctx context.Context, agentUUIDs []string) (map[string][]routerconfig.Held, error) {
	if len(agentUUIDs) == 0 {
		return map[string][]routerconfig.Held{}, nil
	}
	query, args, err := t.in(`SELECT agent_uuid, kind, service_name, object FROM router_entries
		WHERE agent_uuid IN (?) ORDER BY agent_uuid, kind, service_name`, agentUUIDs)
	if err != nil {
		return nil, err
	}
	return t.heldObjects(ctx, query, args...)
}

// heldObjects runs a query of router entries, by agent.
func (t *Tx) heldObjects(ctx context.Context, query string, args ...any) (map[string][]routerconfig.Held, error) {
	var rows []struct {
		Agent   string  `db:"agent_uuid"`
		Kind    string  `db:"kind"`
		Service string  `db:"service_name"`
		Object  *string `db:"object"`
	}
	if err := t.sel(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	out := map[string][]routerconfig.Held{}
	for _, r := range rows {
		h := routerconfig.Held{Kind: r.Kind, Service: r.Service}
		if r.Object != nil {
			h.JSON = json.RawMessage(*r.Object)
		}
		out[r.Agent] = append(out[r.Agent], h)
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
// row lock, which numbers the agent's changes in commit order, with the
// transaction's last writes (bumpLast) unless it rewrites the base:
// passes of other services on the router (a hub during a burst of
// creates) wait for each other only from there to their commit, however
// much their transactions do after the write.
func (t *Tx) WriteRouter(ctx context.Context, agentUUID string, w RouterWrite) error {
	return t.WriteRouters(ctx, map[string]RouterWrite{agentUUID: w})
}

// WriteRouters is WriteRouter for many agents' routers, in a few
// statements for all of them (the agent queue's batches, whose routers
// the transaction has locked).
func (t *Tx) WriteRouters(ctx context.Context, writes map[string]RouterWrite) error {
	agents := slices.Sorted(maps.Keys(writes))
	var drops []any
	for _, u := range agents {
		for _, d := range writes[u].Drop {
			drops = append(drops, u, d.Kind, d.Service)
			t.touch(changeService, d.Service)
		}
		for _, h := range writes[u].Write {
			t.touch(changeService, h.Service)
		}
	}
	for chunk := range slices.Chunk(drops, 3*entriesPerInsert) {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?),", len(chunk)/3), ",")
		if _, err := t.exec(ctx, `DELETE FROM router_entries WHERE (agent_uuid, kind, service_name) IN (VALUES `+values+`)`, chunk...); err != nil {
			return err
		}
	}
	// The change that makes each agent's writes visible (distribution.go).
	// One that keeps the base takes its lock last (bumpLast), just before
	// the commit; its entries are numbered then.
	changed := map[string][]byte{}
	var later []string
	seqs := map[string]int64{}
	for _, u := range agents {
		switch w := writes[u]; {
		case w.Base != nil:
			changed[u] = w.Base
		case w.Changed:
			later = append(later, u)
		case len(w.Write) > 0:
			seq, err := t.changeSeq(ctx, u)
			if err != nil {
				return err
			}
			seqs[u] = seq
		}
	}
	bumped, err := t.routersChanged(ctx, changed, nil)
	if err != nil {
		return err
	}
	maps.Copy(seqs, bumped)
	var rewritten, kept []entry
	for _, u := range agents {
		w := writes[u]
		for _, h := range w.Write {
			e := entry{agent: u, seq: seqs[u], Held: h}
			if w.Rewritten[h.Kind+"/"+h.Service] {
				rewritten = append(rewritten, e)
			} else {
				kept = append(kept, e)
			}
		}
	}
	if err := t.upsertEntries(ctx, rewritten, `, written_at = excluded.written_at, change_seq = excluded.change_seq, acknowledged_at = NULL`); err != nil {
		return err
	}
	if err := t.upsertEntries(ctx, kept, ``); err != nil {
		return err
	}
	if len(later) > 0 {
		t.touch(changeVersions, later...) // notified before the last writes run
		if t.numbering == nil {
			t.numbering = map[string][]any{}
			t.last = append(t.last, t.bumpLast)
		}
		for _, u := range later {
			number := t.numbering[u]
			for _, h := range writes[u].Write {
				number = append(number, u, h.Kind, h.Service)
			}
			t.numbering[u] = number // listed even with nothing to number
		}
	}
	return nil
}

// bumpLast records the change of the agents' documents whose entries
// WriteRouters wrote unnumbered (change seq 0): their versions and change
// flags, whose row locks every change of those agents waits for, so that
// it is the transaction's last write (passes of other services on a hub
// wait for each other only from here to their commit), and the entries'
// change seq.
func (t *Tx) bumpLast(ctx context.Context) error {
	bases := make(map[string][]byte, len(t.numbering)) // each nil: its base kept
	var number []any
	for _, u := range slices.Sorted(maps.Keys(t.numbering)) {
		bases[u] = nil
		number = append(number, t.numbering[u]...)
	}
	_, err := t.routersChanged(ctx, bases, number)
	return err
}

// entry is an object to store on an agent's router, written by change seq.
type entry struct {
	agent string
	seq   int64
	routerconfig.Held
}

// entriesPerInsert bounds the rows of one INSERT (six arguments each,
// within both databases' limits).
const entriesPerInsert = 500

// upsertEntries stores objects as router entries written now, a
// statement per entriesPerInsert; an entry that exists keeps its times
// unless onConflict sets them.
func (t *Tx) upsertEntries(ctx context.Context, entries []entry, onConflict string) error {
	ts := now()
	for chunk := range slices.Chunk(entries, entriesPerInsert) {
		var values strings.Builder
		args := make([]any, 0, 6*len(chunk))
		for i, e := range chunk {
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?, ?, ?, ?, ?)")
			var object any
			if e.JSON != nil {
				object = string(e.JSON)
			}
			args = append(args, e.agent, e.Kind, e.Service, ts, e.seq, object)
		}
		if _, err := t.exec(ctx, `INSERT INTO router_entries (agent_uuid, kind, service_name, written_at, change_seq, object) VALUES `+values.String()+`
			ON CONFLICT (agent_uuid, kind, service_name) DO UPDATE SET object = excluded.object`+onConflict, args...); err != nil {
			return err
		}
	}
	return nil
}

// routersChanged records that the documents agents pull changed (and
// stores each one's base unless nil): a new version (its ETag) and the
// raised microserviceConfig flag, and numbers by it the entries of number
// (agent, kind, service, each) still unnumbered. It returns each change's
// sequence, by agent; ErrNotFound when one has no router.
func (t *Tx) routersChanged(ctx context.Context, bases map[string][]byte, number []any) (map[string]int64, error) {
	seqs := make(map[string]int64, len(bases))
	if len(bases) == 0 {
		return seqs, nil
	}
	agents := slices.Sorted(maps.Keys(bases))
	t.touch(changeVersions, agents...)
	configs := make([]any, 0, 2*len(agents))
	for _, u := range agents {
		var config *string
		if b := bases[u]; b != nil {
			s := string(b)
			config = &s
		}
		configs = append(configs, u, config)
	}
	if t.dialect == Postgres {
		// One statement, which also learns the transaction's id for the
		// commit (see Store.inTx) and numbers the entries when they fit in
		// it: the row locks it takes are held for a round trip less each.
		var rows []struct {
			Agent string `db:"agent_uuid"`
			Seq   int64  `db:"last_updated"`
			XID   int64  `db:"xid"`
		}
		numbered, numberArgs := "", []any(nil)
		if len(number) > 0 && len(number) <= 3*entriesPerInsert {
			numbered = `, numbered AS (UPDATE router_entries e SET change_seq = f.last_updated
				FROM flagged f, (VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?),", len(number)/3), ",") + `) AS k (agent_uuid, kind, service_name)
				WHERE f.agent_uuid = k.agent_uuid AND e.agent_uuid = k.agent_uuid AND e.kind = k.kind
				  AND e.service_name = k.service_name AND e.change_seq = 0)`
			numberArgs, number = number, nil
		}
		values := strings.TrimSuffix(strings.Repeat("(?, CAST(? AS TEXT)),", len(agents)), ",")
		args := append(append(configs, now(), time.Now().UnixMilli()), numberArgs...)
		err := t.sel(ctx, &rows, `WITH v (agent_uuid, config) AS (VALUES `+values+`),
			bumped AS (UPDATE router_configs c SET version = c.version + 1, updated_at = ?, config = COALESCE(v.config, c.config)
				FROM v WHERE c.agent_uuid = v.agent_uuid RETURNING c.agent_uuid),
			flagged AS (INSERT INTO agent_changes (agent_uuid, microservice_config, last_updated) SELECT agent_uuid, TRUE, ? FROM bumped
				`+raiseFlag+` RETURNING agent_uuid, last_updated)`+numbered+`
			SELECT agent_uuid, last_updated, txid_current() AS xid FROM flagged`, args...)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			seqs[r.Agent], t.xid = r.Seq, r.XID
		}
		if len(seqs) < len(agents) {
			return nil, ErrNotFound
		}
		return seqs, t.numberEntries(ctx, seqs, number)
	}
	for i, u := range agents {
		n, err := t.exec(ctx, `UPDATE router_configs SET version = version + 1, updated_at = ?, config = COALESCE(?, config) WHERE agent_uuid = ?`, now(), configs[2*i+1], u)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, ErrNotFound
		}
		if seqs[u], err = t.flagChange(ctx, u); err != nil {
			return nil, err
		}
	}
	return seqs, t.numberEntries(ctx, seqs, number)
}

// numberEntries sets the change seq of the unnumbered entries of number
// (agent, kind, service, each) to their agent's in seqs, a statement per
// entriesPerInsert.
func (t *Tx) numberEntries(ctx context.Context, seqs map[string]int64, number []any) error {
	for chunk := range slices.Chunk(number, 3*entriesPerInsert) {
		var values []string
		var args []any
		for i := 0; i < len(chunk); i += 3 {
			values = append(values, `(?, ?, ?, CAST(? AS BIGINT))`)
			args = append(args, chunk[i], chunk[i+1], chunk[i+2], seqs[chunk[i].(string)])
		}
		if _, err := t.exec(ctx, `WITH k (agent_uuid, kind, service_name, seq) AS (VALUES `+strings.Join(values, ", ")+`)
			UPDATE router_entries SET change_seq = k.seq FROM k
			WHERE router_entries.agent_uuid = k.agent_uuid AND router_entries.kind = k.kind
			  AND router_entries.service_name = k.service_name AND router_entries.change_seq = 0`, args...); err != nil {
			return err
		}
	}
	return nil
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

// AgentsChanges returns the change flags of those of agentUUIDs that have
// had a change, by agent uuid.
func (t *Tx) AgentsChanges(ctx context.Context, agentUUIDs []string) (map[string]Changes, error) {
	rows, err := selIn[struct {
		Agent string `db:"agent_uuid"`
		Changes
	}](ctx, t, `SELECT agent_uuid, microservice_config, last_updated, acknowledged FROM agent_changes
		WHERE last_updated > 0 AND agent_uuid IN (?)`, agentUUIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Changes, len(rows))
	for _, r := range rows {
		out[r.Agent] = r.Changes
	}
	return out, nil
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
	by, err := t.ListenerServicesOf(ctx, map[string]Selection{agentUUID: {Tokens: tokens, All: all}}, only)
	return by[agentUUID], err
}

// Selection is what an agent's distribution tokens select: the services
// tagged with any of Tokens, or every service when All.
type Selection struct {
	Tokens []string
	All    bool
}

// ListenerServicesOf is ListenerServices for many agents, by agent: one
// statement for the hub listeners and one per distinct selection (a fleet
// tagged alike costs one).
func (t *Tx) ListenerServicesOf(ctx context.Context, agents map[string]Selection, only string) (map[string][]service.ListenerWant, error) {
	filter, fargs := "", []any{}
	if only != "" {
		filter, fargs = ` AND s.name = ?`, []any{only}
	}
	tagged := map[string][]service.ListenerWant{} // by selection key
	uuids := make([]string, 0, len(agents))
	for uuid, sel := range agents {
		uuids = append(uuids, uuid)
		key := sel.key()
		if _, done := tagged[key]; done {
			continue
		}
		var got []service.ListenerWant
		switch {
		case sel.All:
			if err := t.sel(ctx, &got, `SELECT s.name, s.bridge_port FROM services s WHERE TRUE`+filter, fargs...); err != nil {
				return nil, err
			}
		case len(sel.Tokens) > 0:
			query, args, err := t.in(`SELECT s.name, s.bridge_port FROM services s
			JOIN service_tags g ON g.service_name = s.name WHERE g.tag IN (?)`+filter+` GROUP BY s.name, s.bridge_port`, append([]any{sel.Tokens}, fargs...)...)
			if err != nil {
				return nil, err
			}
			if err := t.sel(ctx, &got, query, args...); err != nil {
				return nil, err
			}
		}
		tagged[key] = got
	}
	hubbed := map[string][]service.ListenerWant{}
	if len(uuids) > 0 {
		var rows []struct {
			Site string `db:"hub_site"`
			service.ListenerWant
		}
		query, args, err := t.in(`SELECT s.hub_site, s.name, s.bridge_port FROM services s WHERE s.hub_site IN (?)`+filter, append([]any{uuids}, fargs...)...)
		if err != nil {
			return nil, err
		}
		if err := t.sel(ctx, &rows, query, args...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			hubbed[r.Site] = append(hubbed[r.Site], r.ListenerWant)
		}
	}
	out := make(map[string][]service.ListenerWant, len(agents))
	for uuid, sel := range agents {
		out[uuid] = mergeListeners(tagged[sel.key()], hubbed[uuid])
	}
	return out, nil
}

// key names a selection among others.
func (s Selection) key() string {
	if s.All {
		return "*"
	}
	return strings.Join(s.Tokens, "\x00")
}

// mergeListeners joins both lists by service, sorted; those of the hub
// are marked Hub.
func mergeListeners(tagged, hubbed []service.ListenerWant) []service.ListenerWant {
	by := make(map[string]service.ListenerWant, len(tagged)+len(hubbed))
	for _, l := range tagged {
		by[l.Service] = l
	}
	for _, l := range hubbed {
		l.Hub = true
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
	by, err := t.ConnectorServicesOf(ctx, map[string]string{agentUUID: routerMode}, only)
	return by[agentUUID], err
}

// ConnectorServicesOf is ConnectorServices for many agents (by uuid, each
// with its router mode) in one statement, by agent.
func (t *Tx) ConnectorServicesOf(ctx context.Context, routerModes map[string]string, only string) (map[string][]service.ConnectorWant, error) {
	out := make(map[string][]service.ConnectorWant, len(routerModes))
	if len(routerModes) == 0 {
		return out, nil
	}
	var rows []struct {
		Site        string `db:"connector_site"`
		Name        string `db:"name"`
		Type        string `db:"type"`
		Resource    string `db:"resource"`
		TargetPort  int    `db:"target_port"`
		Application string `db:"application"`
		MsName      string `db:"ms_name"`
		HostNetwork bool   `db:"host_network_mode"`
	}
	filter, args := "", []any{service.TypeMicroservice, slices.Collect(maps.Keys(routerModes))}
	if only != "" {
		filter, args = ` AND s.name = ?`, append(args, only)
	}
	query, args, err := t.in(`SELECT s.connector_site, s.name, s.type, s.resource, s.target_port,
			COALESCE(m.application, '') AS application, COALESCE(m.name, '') AS ms_name,
			COALESCE(m.host_network_mode, FALSE) AS host_network_mode
		FROM services s LEFT JOIN microservices m ON s.type = ? AND m.uuid = s.resource
		WHERE s.connector_site IN (?)`+filter+`
		ORDER BY s.name`, args...)
	if err != nil {
		return nil, err
	}
	if err := t.sel(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.Site] = append(out[r.Site], service.ConnectorWant{Service: r.Name, TargetPort: r.TargetPort, Backend: service.Backend{
			Type: r.Type, Resource: r.Resource, RouterMode: routerModes[r.Site],
			Application: r.Application, Microservice: r.MsName, HostNetwork: r.HostNetwork}})
	}
	return out, nil
}
