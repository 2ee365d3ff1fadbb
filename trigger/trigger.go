// Package trigger asks for reconciles after a change is committed: a
// service's workflow is signalled (or started), and agents are marked in
// the store's queue, then the queue's workflow is woken. It is the API's
// Reconciler and the activities' Signaler; workflows/ itself never writes
// to the store.
package trigger

import (
	"context"

	"svcbridge/store"
	"svcbridge/workflows/temporalclient"
)

// Trigger asks for reconciles.
type Trigger struct {
	Workflows temporalclient.Client
	Store     *store.Store // the agent queue
}

// ServiceChanged asks the service's workflow to reconcile.
func (t Trigger) ServiceChanged(ctx context.Context, name string) error {
	return t.Workflows.ServiceChanged(ctx, name)
}

// ServiceCreated starts the new service's workflow.
func (t Trigger) ServiceCreated(ctx context.Context, name string) error {
	return t.Workflows.ServiceCreated(ctx, name)
}

// AgentsChanged queues the agents' routers for a reconcile and wakes the
// queue's workflow. The queue is in the store, so a mark survives anything
// that happens to Temporal; the worker's resync wakes the workflow again
// if marks wait.
func (t Trigger) AgentsChanged(ctx context.Context, uuids ...string) error {
	if len(uuids) == 0 {
		return nil
	}
	if err := t.Store.InTx(ctx, func(tx *store.Tx) error { return tx.QueueAgents(ctx, uuids) }); err != nil {
		return err
	}
	return t.AgentsQueued(ctx, uuids...)
}

// AgentsQueued wakes the queue's workflow for agents that a committed
// write queued in its own transaction.
func (t Trigger) AgentsQueued(ctx context.Context, uuids ...string) error {
	if len(uuids) == 0 {
		return nil
	}
	return t.Workflows.WakeAgentQueue(ctx)
}
