package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"svcbridge/inventory"
)

// Distribution visibility: which routers hold a service's listener, since
// which change, and whether the agent has applied that change.
//
// Each router_entries row records change_seq, the agent's
// agent_changes.last_updated that the write of the entry set (the change
// flag is raised in the same transaction, under the router's row lock, so
// the value read back there is exactly this write's). The agent applies a
// change when it acknowledges a lastUpdated >= change_seq; AckChanges then
// stamps acknowledged_at on the entries it covers.

// changeSeq is the agent's current change sequence (its last_updated), 0
// when it never had a change.
func (t *Tx) changeSeq(ctx context.Context, agentUUID string) (int64, error) {
	var seq int64
	err := t.get(ctx, &seq, `SELECT last_updated FROM agent_changes WHERE agent_uuid = ?`, agentUUID)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	return seq, err
}

// stampAcknowledged records when the agent acknowledged the entries written
// by changes up to lastUpdated.
func (t *Tx) stampAcknowledged(ctx context.Context, agentUUID string, lastUpdated int64) error {
	_, err := t.exec(ctx, `UPDATE router_entries SET acknowledged_at = ?
		WHERE agent_uuid = ? AND acknowledged_at IS NULL AND change_seq <= ?`, now(), agentUUID, lastUpdated)
	return err
}

// ListenerEntry is one listener svcbridge wrote on an agent's router.
type ListenerEntry struct {
	Agent     string `db:"agent_uuid"`
	AgentName string `db:"agent_name"`
	Service   string `db:"service_name"`
	// BridgePort is nil when the service row is already gone (its
	// listeners are being removed).
	BridgePort *int      `db:"bridge_port"`
	WrittenAt  time.Time `db:"written_at"`
	// ChangeSeq is the agent's lastUpdated that made this entry visible.
	ChangeSeq int64 `db:"change_seq"`
	// AcknowledgedAt is when the agent acknowledged a lastUpdated >=
	// ChangeSeq; nil until then.
	AcknowledgedAt *time.Time `db:"acknowledged_at"`
}

// Acknowledged reports whether the agent has applied the entry.
func (e ListenerEntry) Acknowledged() bool { return e.AcknowledgedAt != nil }

const listenerEntryCols = `e.agent_uuid, a.name AS agent_name, e.service_name, s.bridge_port,
	e.written_at, e.change_seq, e.acknowledged_at`

// ServiceListeners lists the routers that hold the listener of a service,
// by agent name.
func (t *Tx) ServiceListeners(ctx context.Context, service string) ([]ListenerEntry, error) {
	var out []ListenerEntry
	err := t.sel(ctx, &out, `SELECT `+listenerEntryCols+` FROM router_entries e
		JOIN agents a ON a.uuid = e.agent_uuid
		LEFT JOIN services s ON s.name = e.service_name
		WHERE e.service_name = ? AND e.kind = 'listener' ORDER BY a.name`, service)
	return utcEntries(out), err
}

// AgentListeners lists the listeners on an agent's router, by service.
func (t *Tx) AgentListeners(ctx context.Context, agentUUID string) ([]ListenerEntry, error) {
	var out []ListenerEntry
	err := t.sel(ctx, &out, `SELECT `+listenerEntryCols+` FROM router_entries e
		JOIN agents a ON a.uuid = e.agent_uuid
		LEFT JOIN services s ON s.name = e.service_name
		WHERE e.agent_uuid = ? AND e.kind = 'listener' ORDER BY e.service_name`, agentUUID)
	return utcEntries(out), err
}

func utcEntries(es []ListenerEntry) []ListenerEntry {
	for i := range es {
		es[i].WrittenAt = es[i].WrittenAt.UTC()
		if at := es[i].AcknowledgedAt; at != nil {
			u := at.UTC()
			es[i].AcknowledgedAt = &u
		}
	}
	return es
}

// SelectedAgent is an agent with a router that carries one of the tags
// asked for; Tags are those of them it carries, in its own tag order
// (what service.TagRule.ListenReason needs of its tags).
type SelectedAgent struct {
	UUID string
	Name string
	Tags []string
}

// AgentsSelectedBy returns the agents with a router carrying any of tags
// (exact matches: see service.TagRule.SelectingAgentTags), by name, each
// with those of tags it carries.
func (t *Tx) AgentsSelectedBy(ctx context.Context, tags []string) ([]SelectedAgent, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	query, args, err := t.in(`SELECT g.agent_uuid, a.name, g.tag FROM agent_tags g JOIN agents a ON a.uuid = g.agent_uuid
		WHERE g.tag IN (?) AND a.router_mode IN (?) ORDER BY a.name, g.position`, tags, inventory.ModesWithRouter())
	if err != nil {
		return nil, err
	}
	var rows []struct {
		UUID string `db:"agent_uuid"`
		Name string `db:"name"`
		Tag  string `db:"tag"`
	}
	if err := t.sel(ctx, &rows, query, args...); err != nil {
		return nil, err
	}
	var out []SelectedAgent
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].UUID != r.UUID {
			out = append(out, SelectedAgent{UUID: r.UUID, Name: r.Name})
		}
		last := &out[len(out)-1]
		last.Tags = append(last.Tags, r.Tag)
	}
	return out, nil
}

// ServicesWithTags maps each service that carries one of tags to those of
// tags it carries.
func (t *Tx) ServicesWithTags(ctx context.Context, tags []string) (map[string][]string, error) {
	out := map[string][]string{}
	for chunk := range slices.Chunk(tags, 500) {
		query, args, err := t.in(`SELECT service_name, tag FROM service_tags WHERE tag IN (?)`, chunk)
		if err != nil {
			return nil, err
		}
		var rows []struct {
			Service string `db:"service_name"`
			Tag     string `db:"tag"`
		}
		if err := t.sel(ctx, &rows, query, args...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Service] = append(out[r.Service], r.Tag)
		}
	}
	return out, nil
}
