package store

import (
	"context"
	"encoding/json"
	"time"

	"svcbridge/wire"
)

// RouterReport is what an agent's router side last said of its router
// (wire.RouterReport), and when.
type RouterReport struct {
	Agent         string    `db:"agent_uuid"`
	Version       string    `db:"version"`
	AppliedSeq    *int64    `db:"applied_seq"`
	Error         string    `db:"error"`
	FailedJSON    string    `db:"failed"`
	FailedCount   int       `db:"failed_count"`
	TCPListeners  int       `db:"tcp_listeners"`
	TCPConnectors int       `db:"tcp_connectors"`
	ReportedAt    time.Time `db:"reported_at"`
	// Latest is the agent's latest change (its lastUpdated): the router
	// lags while AppliedSeq is behind it.
	Latest int64 `db:"latest"`
}

// Lagging reports whether the router has not applied the agent's latest
// change.
func (r RouterReport) Lagging() bool { return r.AppliedSeq == nil || *r.AppliedSeq < r.Latest }

// Failed are the bridges the router refused or cannot serve.
func (r RouterReport) Failed() []wire.FailedBridge {
	var out []wire.FailedBridge
	_ = json.Unmarshal([]byte(r.FailedJSON), &out) // written by SaveRouterReport
	return out
}

const reportCols = `agent_uuid, version, applied_seq, error, failed, failed_count, tcp_listeners, tcp_connectors, reported_at`

// SaveRouterReport records what an agent's router side reports; with a
// LastUpdated, it acknowledges the changes up to it (AckChanges), in the
// same transaction.
func (t *Tx) SaveRouterReport(ctx context.Context, agentUUID string, r wire.RouterReport) error {
	failed := r.Failed
	if failed == nil {
		failed = []wire.FailedBridge{}
	}
	fj, err := json.Marshal(failed)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO router_reports (`+reportCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent_uuid) DO UPDATE SET version = excluded.version, applied_seq = excluded.applied_seq,
			error = excluded.error, failed = excluded.failed, failed_count = excluded.failed_count,
			tcp_listeners = excluded.tcp_listeners, tcp_connectors = excluded.tcp_connectors, reported_at = excluded.reported_at`,
		agentUUID, r.Version, r.LastUpdated, r.Error, string(fj), len(failed), r.TCPListeners, r.TCPConnectors, now())
	t.touch(changeListed, agentUUID)
	if err != nil || r.LastUpdated == nil {
		return err
	}
	return t.AckChanges(ctx, agentUUID, *r.LastUpdated)
}

// RouterReports returns the last report of each of the agents that have
// one, by agent uuid (every agent's when agentUUIDs is nil).
func (t *Tx) RouterReports(ctx context.Context, agentUUIDs []string) (map[string]RouterReport, error) {
	var rows []RouterReport
	const read = `SELECT r.` + reportCols + `, COALESCE(c.last_updated, 0) AS latest
		FROM router_reports r LEFT JOIN agent_changes c ON c.agent_uuid = r.agent_uuid`
	if agentUUIDs == nil {
		if err := t.sel(ctx, &rows, read); err != nil {
			return nil, err
		}
	} else {
		var err error
		if rows, err = selIn[RouterReport](ctx, t, read+` WHERE r.agent_uuid IN (?)`, agentUUIDs); err != nil {
			return nil, err
		}
	}
	out := make(map[string]RouterReport, len(rows))
	for _, r := range rows {
		r.ReportedAt = r.ReportedAt.UTC()
		out[r.Agent] = r
	}
	return out, nil
}

// Report is the report as its router side sent it.
func (r RouterReport) Report() wire.RouterReport {
	return wire.RouterReport{LastUpdated: r.AppliedSeq, Version: r.Version, Error: r.Error, Failed: r.Failed(),
		TCPListeners: r.TCPListeners, TCPConnectors: r.TCPConnectors}
}

// Shown is the report as the API shows it on the agent.
func (r RouterReport) Shown() *wire.AgentRouter {
	failed := r.Failed()
	if failed == nil {
		failed = []wire.FailedBridge{}
	}
	return &wire.AgentRouter{ReportedAt: wire.Time(r.ReportedAt), AppliedChange: r.AppliedSeq, Lagging: r.Lagging(), Error: r.Error,
		Failed: failed, TCPListeners: r.TCPListeners, TCPConnectors: r.TCPConnectors}
}
