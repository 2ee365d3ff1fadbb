package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svcbridge/store"
)

// outlookChange versions AgentQueueWorkflow's loop: from outlookVersion on
// it asks the store before each window; older runs replay the blind one.
const (
	outlookChange  = "agent-queue-outlook"
	outlookVersion = 1
)

// leaseSlack is added to the wait for a lease to end: the lease was set by
// a worker's clock and is checked by one, the timer runs on the server's.
const leaseSlack = time.Second

// queueOutlook asks the store, on a local activity, how many agents a
// window could claim and when the earliest lease ends. When the store
// stays down through the retries, it answers "look again in a minute":
// batches would fail as well.
func queueOutlook(ctx workflow.Context) store.QueueOutlook {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 5 * time.Second},
	})
	var q store.QueueOutlook
	if err := workflow.ExecuteLocalActivity(lctx, a.AgentQueueOutlook, drainWindow*drainBatch).Get(ctx, &q); err != nil {
		workflow.GetLogger(ctx).Warn("cannot read the agent queue; looking again in a minute", "error", err)
		return store.QueueOutlook{NextLease: workflow.Now(ctx).Add(time.Minute)}
	}
	return q
}

// batchesFor is how many AgentBatchWorkflow children claimable agents
// need: one per drainBatch, at most drainWindow, none for none.
func batchesFor(claimable int) int {
	return min((claimable+drainBatch-1)/drainBatch, drainWindow)
}

// leaseWait is how long the queue waits, unless signalled, for the
// earliest lease (nextLease) to end; 0, for signals only, when none is held.
func leaseWait(now, nextLease time.Time) time.Duration {
	if nextLease.IsZero() {
		return 0
	}
	return max(nextLease.Sub(now), 0) + leaseSlack
}
