package activities

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sync/errgroup"

	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
)

// QueueFanout queues the agents a pass of the named service reaches
// beyond its sites (service.PassReach, read again with the placement the
// plan stored) and wakes the queue's workflow, queueChunk agents at a
// time, heartbeating after each chunk the last agent it queued: when its
// worker dies, Temporal retries it after reconcile.FanoutHeartbeat rather than the
// whole StartToCloseTimeout, and the retry goes on after that agent (the
// list is sorted; an agent that joined the fan-out since, sorting before
// it, was queued by the change that made it join). Queueing an agent
// again is harmless: its marks coalesce.
func (a *Activities) QueueFanout(ctx context.Context, name string) error {
	var after string
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &after) != nil {
		after = ""
	}
	return a.queueFanout(ctx, name, after, func(last string) { activity.RecordHeartbeat(ctx, last) })
}

// queueFanout queues a pass's fan-out after the agent after ("" for all),
// telling queued the last agent of each chunk it queued.
func (a *Activities) queueFanout(ctx context.Context, name, after string, queued func(last string)) error {
	var reach service.Reach
	err := a.Store.Read(ctx, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, name)
		var placed *service.Placement
		switch {
		case err == nil:
			placed = &svc.Placement
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		reach, err = a.passReach(ctx, tx, name, placed, svc.Tags)
		return err
	})
	if err != nil {
		return err
	}
	fanout := reach.Fanout
	if after != "" {
		i, found := slices.BinarySearch(fanout, after)
		if found {
			i++
		}
		fanout = fanout[i:]
	}
	if err := a.queueAgents(ctx, fanout, func(n int) { queued(fanout[n-1]) }); err != nil {
		return err
	}
	return a.Store.InTx(ctx, func(tx *store.Tx) error { return tx.FanoutQueued(ctx, name) })
}

// QueueAgents queues the agents a plan listed (Plan.Fanout), for runs of
// the service workflow begun by a release whose plans listed them.
func (a *Activities) QueueAgents(ctx context.Context, uuids []string) error {
	from := 0
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &from) != nil {
		from = 0
	}
	return a.queueAgents(ctx, uuids[min(from, len(uuids)):], func(n int) { activity.RecordHeartbeat(ctx, from+n) })
}

// queueChunk is how many agents QueueFanout queues between heartbeats.
const queueChunk = 500

// queueAgents queues uuids a chunk at a time, telling queued how many it
// has queued after each.
func (a *Activities) queueAgents(ctx context.Context, uuids []string, queued func(n int)) error {
	for start := 0; start < len(uuids); start += queueChunk {
		end := min(start+queueChunk, len(uuids))
		if err := a.Signaler.AgentsChanged(ctx, uuids[start:end]...); err != nil {
			return err
		}
		queued(end)
	}
	return nil
}

// DrainParallel is how many groups of drainGroup agents one DrainAgents
// reconciles at once, each in one transaction (passRouters).
const DrainParallel = 4

// drainGroup is how many agents one transaction of a batch reconciles: a
// few statements read all of theirs, and their writes share a commit.
const drainGroup = 100

// batchNames is how many agent names an reconcile.AgentBatch keeps.
const batchNames = 3

// DrainAgents claims up to limit queued agents, reconciles their routers,
// and clears the marks of those it reconciled.
func (a *Activities) DrainAgents(ctx context.Context, limit int) (reconcile.AgentBatch, error) {
	var claimed []store.QueuedAgent
	err := a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		claimed, err = tx.ClaimQueuedAgents(ctx, limit, 2*time.Minute)
		return err
	})
	if err != nil || len(claimed) == 0 {
		return reconcile.AgentBatch{}, err
	}
	// Timed from the claim: a poll that found no agent is not a batch.
	defer func(start time.Time) { metrics.FanoutBatch.Observe(time.Since(start).Seconds()) }(time.Now())
	var mu sync.Mutex
	var done, retry []store.QueuedAgent
	names := make([]string, len(claimed))
	services := map[string]bool{}
	failed := make([]string, len(claimed))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DrainParallel)
	for first := 0; first < len(claimed); first += drainGroup {
		group := claimed[first:min(first+drainGroup, len(claimed))]
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				// The activity is cancelled (its worker stops, or its
				// heartbeat timed out): the agents not begun keep their
				// claim, and are claimed again when its lease ends.
				return err
			}
			uuids := make([]string, len(group))
			for i, q := range group {
				uuids[i] = q.Agent
			}
			res, errs, err := a.passRouters(gctx, uuids)
			mu.Lock()
			defer mu.Unlock()
			for i, q := range group {
				if err := cmp.Or(err, errs[i]); err != nil {
					activity.GetLogger(ctx).Warn("agent reconcile failed; retried in a few seconds", "agent", q.Agent, "error", err)
					failed[first+i] = q.Agent + ": " + reconcile.Reason(err)
					retry = append(retry, q)
					continue
				}
				names[first+i] = cmp.Or(res[i].Name, q.Agent)
				for _, s := range res[i].Services {
					services[s] = true
				}
				done = append(done, q)
			}
			activity.RecordHeartbeat(ctx, len(done))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return reconcile.AgentBatch{}, err
	}
	batch := reconcile.AgentBatch{Claimed: len(claimed), Services: len(services),
		Names: firstN(names, batchNames), Failed: firstN(failed, len(failed))}
	return batch, a.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.DoneQueuedAgents(ctx, done); err != nil {
			return err
		}
		return tx.RetryQueuedAgents(ctx, retry, time.Now().Add(reconcile.RetryFailedAgents))
	})
}

// firstN returns the first n non-empty strings of list.
func firstN(list []string, n int) []string {
	var out []string
	for _, s := range list {
		if s != "" && len(out) < n {
			out = append(out, s)
		}
	}
	return out
}

// AgentQueueOutlook says how many queued agents a batch could claim now
// (at most limit) and when the earliest lease held ends: the agent queue's
// workflow starts batches for the first and waits for the second.
func (a *Activities) AgentQueueOutlook(ctx context.Context, limit int) (reconcile.QueueOutlook, error) {
	return a.Store.QueueOutlook(ctx, limit)
}
