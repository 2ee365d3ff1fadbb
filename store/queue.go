package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"svcbridge/reconcile"
)

// QueuedAgent is an agent whose router must be reconciled, at mark Seq.
type QueuedAgent struct {
	Agent string `db:"agent_uuid"`
	Seq   int64  `db:"seq"`
}

// QueueAgents marks agents for a reconcile. A mark of an agent already
// queued coalesces with it: seq moves on and any lease ends, so a
// reconcile running now does not clear the newer mark.
func (t *Tx) QueueAgents(ctx context.Context, uuids []string) error {
	for chunk := range slices.Chunk(uuids, marksPerStatement) {
		args := make([]any, len(chunk))
		for i, u := range chunk {
			args[i] = u
		}
		values := strings.TrimSuffix(strings.Repeat("(?, 1, NULL),", len(chunk)), ",")
		if _, err := t.exec(ctx, `INSERT INTO agent_queue (agent_uuid, seq, claimed_until) VALUES `+values+`
			ON CONFLICT (agent_uuid) DO UPDATE SET seq = agent_queue.seq + 1, claimed_until = NULL`, args...); err != nil {
			return err
		}
	}
	return nil
}

// ClaimQueuedAgents leases up to limit queued agents that no one holds.
// On PostgreSQL, SKIP LOCKED lets several workers claim disjoint sets at
// once.
func (t *Tx) ClaimQueuedAgents(ctx context.Context, limit int, lease time.Duration) ([]QueuedAgent, error) {
	skip := ""
	if t.dialect == Postgres {
		skip = " FOR UPDATE SKIP LOCKED"
	}
	ts := now()
	var out []QueuedAgent
	err := t.sel(ctx, &out, `UPDATE agent_queue SET claimed_until = ? WHERE agent_uuid IN (
			SELECT agent_uuid FROM agent_queue WHERE claimed_until IS NULL OR claimed_until < ?
			ORDER BY agent_uuid LIMIT ?`+skip+`) RETURNING agent_uuid, seq`, ts.Add(lease), ts, limit)
	return out, err
}

// DoneQueuedAgents removes the marks that were reconciled; a newer mark of
// the same agent (another seq) stays queued.
func (t *Tx) DoneQueuedAgents(ctx context.Context, done []QueuedAgent) error {
	return t.eachMark(ctx, done, `DELETE FROM agent_queue`, nil)
}

// RetryQueuedAgents shortens the lease of marks whose reconcile failed, so
// that a batch claims them again at retryAt rather than when the lease
// would have ended; a newer mark of the same agent is already claimable.
func (t *Tx) RetryQueuedAgents(ctx context.Context, failed []QueuedAgent, retryAt time.Time) error {
	return t.eachMark(ctx, failed, `UPDATE agent_queue SET claimed_until = ?`, []any{retryAt.UTC()})
}

// marksPerStatement bounds the queue rows one statement marks, clears or
// retries (two arguments each, within both databases' limits).
const marksPerStatement = 500

// eachMark runs stmt (with its leading args) on the queue rows of marks,
// matched by agent and seq, one statement per marksPerStatement: a
// batch's marks cost one round trip, not one each.
func (t *Tx) eachMark(ctx context.Context, marks []QueuedAgent, stmt string, lead []any) error {
	for chunk := range slices.Chunk(marks, marksPerStatement) {
		args := append([]any(nil), lead...)
		for _, m := range chunk {
			args = append(args, m.Agent, m.Seq)
		}
		values := strings.TrimSuffix(strings.Repeat("(?, CAST(? AS BIGINT)),", len(chunk)), ",")
		if _, err := t.exec(ctx, stmt+` WHERE (agent_uuid, seq) IN (VALUES `+values+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// QueuedAgentCount counts the agents waiting for a reconcile.
func (t *Tx) QueuedAgentCount(ctx context.Context) (int, error) {
	var n int
	return n, t.get(ctx, &n, `SELECT COUNT(*) FROM agent_queue`)
}

// AgentQueued reports whether an agent waits for a reconcile.
func (t *Tx) AgentQueued(ctx context.Context, uuid string) (bool, error) {
	var n int
	err := t.get(ctx, &n, `SELECT COUNT(*) FROM agent_queue WHERE agent_uuid = ?`, uuid)
	return n > 0, err
}

// QueueOutlook counts the claimable agents up to limit, and finds the
// earliest lease that has not ended, on a read snapshot. Both stay cheap
// with 100,000 agents queued: the count stops at limit claimable rows
// (leased rows are few: a window's, failed ones' and a dead worker's), and
// the lease is the first entry of the leased rows' index.
func (s *Store) QueueOutlook(ctx context.Context, limit int) (reconcile.QueueOutlook, error) {
	var q reconcile.QueueOutlook
	err := s.Read(ctx, func(t *Tx) error {
		ts := now()
		if err := t.get(ctx, &q.Claimable, `SELECT COUNT(*) FROM (SELECT 1 FROM agent_queue
			WHERE claimed_until IS NULL OR claimed_until < ? LIMIT ?) c`, ts, limit); err != nil {
			return err
		}
		// A column of its own, not MIN(): SQLite's driver reads a time
		// only from a column declared TIMESTAMP.
		var next []time.Time
		if err := t.sel(ctx, &next, `SELECT claimed_until FROM agent_queue WHERE claimed_until >= ?
			ORDER BY claimed_until LIMIT 1`, ts); err != nil {
			return err
		}
		if len(next) > 0 {
			q.NextLease = next[0]
		}
		return nil
	})
	return q, err
}
