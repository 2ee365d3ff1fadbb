// Package worker registers svcbridge's workflows and activities on a
// Temporal worker, and runs the resync that re-starts reconciles a lost
// signal would otherwise leave undone.
package worker

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"svcbridge/activities"
	"svcbridge/store"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

// WorkflowCacheSize is how many workflows a worker process keeps in memory
// between their tasks. Every service has a workflow that waits for its
// next change, so the SDK's default (10,000) would grow the worker's memory
// with the number of services; an evicted workflow replays its short
// history (it continues as new) when its next signal comes.
const WorkflowCacheSize = 500

// The cache is one per process, made by the first SDK worker: in dev that
// is one of the embedded Temporal server's own, before svcbridge's.
func init() { sdkworker.SetStickyWorkflowCacheSize(WorkflowCacheSize) }

// WorkflowTaskPollers is how many workflow task polls a worker keeps open.
// Every create starts a workflow whose first task goes to the task queue:
// with the SDK's default 2 pollers, tasks of a burst found none waiting and
// went through the server's stored backlog.
const WorkflowTaskPollers = 8

// New returns a worker on taskQueue with everything registered, its
// workflows on timing (the zero value: production's). onFatal,
// when not nil, hears of an error that stopped the worker for good.
func New(c client.Client, taskQueue string, acts *activities.Activities, timing workflows.Timing, onFatal func(error)) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, sdkworker.Options{
		// Let running activities finish on shutdown instead of cutting them off.
		WorkerStopTimeout:                10 * time.Second,
		OnFatalError:                     onFatal,
		MaxConcurrentWorkflowTaskPollers: WorkflowTaskPollers,
	})
	workflows.Register(w, timing)
	for name, fn := range acts.ByName() {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	return w
}

// Resync signals the workflow of every unsettled service (changed but not
// reconciled for grace, or with router entries left after its row went)
// every interval until ctx ends. Any number of workers may run it: the
// signals are idempotent.
func Resync(ctx context.Context, st *store.Store, wf temporalclient.Client, interval, grace time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := ResyncOnce(ctx, st, wf, grace); err != nil && ctx.Err() == nil {
			log.Warn("resync failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ResyncOnce runs one resync pass: it signals unsettled services, and
// wakes the agent queue's workflow when agents wait in the queue.
func ResyncOnce(ctx context.Context, st *store.Store, wf temporalclient.Client, grace time.Duration) error {
	var names []string
	var queued int
	err := st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if err := tx.PruneDeletions(ctx); err != nil {
			return err
		}
		if names, err = tx.UnsettledServices(ctx, time.Now().UTC().Add(-grace)); err != nil {
			return err
		}
		queued, err = tx.QueuedAgentCount(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if queued > 0 {
		if err := wf.WakeAgentQueue(ctx); err != nil {
			return err
		}
	}
	return signalAll(ctx, wf, names)
}
