package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svcbridge/reconcile"
)

// leaseSlack is added to the wait for a lease to end: the lease was set by
// a worker's clock and is checked by one, the timer runs on the server's.
const leaseSlack = time.Second

// queueOutlook asks the store, on a local activity, how many agents a
// window could claim and when the earliest lease ends. When the store
// stays down through the retries, it answers "look again in a minute":
// batches would fail as well.
func queueOutlook(ctx workflow.Context) reconcile.QueueOutlook {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 5 * time.Second},
	})
	var q reconcile.QueueOutlook
	if err := workflow.ExecuteLocalActivity(lctx, reconcile.ActivityAgentQueueOutlook, drainWindow*drainBatch).Get(ctx, &q); err != nil {
		workflow.GetLogger(ctx).Warn("cannot read the agent queue; looking again in a minute", "error", err)
		return reconcile.QueueOutlook{NextLease: workflow.Now(ctx).Add(time.Minute)}
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

// AgentQueueWorkflow (one, ID <prefix>agents/queue) drains the queue of
// agents to reconcile through AgentBatchWorkflow children, each claiming
// and reconciling a batch: before each window it asks the store how many
// agents are claimable and starts only the batches they need (none when
// none are), windows following while batches come back full; then it
// waits for a signal, or for the earliest lease to end. Marks of one agent
// coalesce in the queue, so many services changing at once cost each
// agent about one router rewrite, and thousands of agents cost a handful
// of children, far within Temporal's limits on pending work and history.
// A child whose agent writes failed fails (red in the Web UI); its agents
// keep their marks with a lease of a few seconds, whose end wakes the
// queue for a batch that retries them.
func (t Timing) AgentQueueWorkflow(ctx workflow.Context, in reconcile.AgentQueueInput) error {
	signals := workflow.GetSignalChannel(ctx, SignalReconcile)
	if !takes(ctx, reconcile.ChangeQueueOutlook) {
		return t.blindAgentQueue(ctx, signals, in)
	}
	for round := 0; round < t.MaxIterations; round++ {
		drain(signals)
		q := queueOutlook(ctx)
		if n := batchesFor(q.Claimable); n > 0 {
			if full, _ := window(ctx, &in, n); full {
				continue // more may wait
			}
			q = queueOutlook(ctx) // for the leases the window left
		}
		waitForSignal(ctx, signals, leaseWait(workflow.Now(ctx), q.NextLease), "")
	}
	return workflow.NewContinueAsNewError(ctx, AgentQueueWorkflowName, in)
}

// blindAgentQueue is the queue's loop of runs started before
// reconcile.ChangeQueueOutlook, which replay it: a window of drainWindow children every
// round whatever is queued, then a wait for a signal, or a minute for
// leases that ended.
func (t Timing) blindAgentQueue(ctx workflow.Context, signals workflow.ReceiveChannel, in reconcile.AgentQueueInput) error {
	// retryAt is when the agents of a failed batch are claimable again;
	// zero when none wait. A signal may end a wait before it.
	var retryAt time.Time
	for round := 0; round < t.MaxIterations; round++ {
		drain(signals)
		if !retryAt.IsZero() && !workflow.Now(ctx).Before(retryAt) {
			retryAt = time.Time{}
		}
		for full := true; full; {
			var failedAt time.Time
			if full, failedAt = window(ctx, &in, drainWindow); !failedAt.IsZero() {
				retryAt = failedAt.Add(reconcile.RetryFailedAgents + time.Second)
			}
		}
		// Failed writes are retried soon; otherwise a minute is for
		// leases of a worker that died.
		wait := time.Minute
		if !retryAt.IsZero() {
			wait = max(retryAt.Sub(workflow.Now(ctx)), time.Second)
		}
		waitForSignal(ctx, signals, wait, "")
	}
	return workflow.NewContinueAsNewError(ctx, AgentQueueWorkflowName, in)
}

// window runs n AgentBatchWorkflow children of up to drainBatch agents at
// once, numbered on from in.NextBatch. It reports whether every one came
// back full, and when the last failed one did (zero when none failed).
func window(ctx workflow.Context, in *reconcile.AgentQueueInput, n int) (full bool, failedAt time.Time) {
	queueID := workflow.GetInfo(ctx).WorkflowExecution.ID
	futures := make([]workflow.Future, n)
	for i := range futures {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:    agentBatch(queueID, in.NextBatch),
			StaticSummary: "Agent router batch " + strconv.Itoa(in.NextBatch),
		})
		in.NextBatch++
		futures[i] = workflow.ExecuteChildWorkflow(cctx, AgentBatchWorkflowName, reconcile.AgentBatchInput{Limit: drainBatch})
	}
	full = true
	for _, f := range futures {
		var b reconcile.AgentBatch
		err := f.Get(ctx, &b)
		if err != nil {
			failedAt = workflow.Now(ctx)
		}
		full = full && err == nil && b.Claimed == drainBatch
	}
	return full, failedAt
}

// AgentBatchWorkflow claims up to in.Limit queued agents and rebuilds their
// routers; its current details say which agents and how many services.
func AgentBatchWorkflow(ctx workflow.Context, in reconcile.AgentBatchInput) (reconcile.AgentBatch, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
	})
	var b reconcile.AgentBatch
	if err := workflow.ExecuteActivity(actx, reconcile.ActivityDrainAgents, in.Limit).Get(ctx, &b); err != nil {
		return b, err
	}
	workflow.SetCurrentDetails(ctx, batchSummary(b))
	if len(b.Failed) > 0 {
		return b, temporal.NewApplicationError(fmt.Sprintf("%d of %d agent router writes failed, retried in a few seconds: %s",
			len(b.Failed), b.Claimed, strings.Join(b.Failed, "; ")), reconcile.TypeRouterWriteFailed)
	}
	return b, nil
}

// batchSummary says which agents a batch covered and how many services.
func batchSummary(b reconcile.AgentBatch) string {
	if b.Claimed == 0 {
		return "no agents were queued"
	}
	names := strings.Join(b.Names, ", ")
	if more := b.Claimed - len(b.Names); more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%d agents (%s), %d services", b.Claimed, names, b.Services)
}
