package workflows

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svcbridge/store"
)

// Client starts and signals the workflows: the API's Reconciler and the
// activities' Signaler. Signal-with-start makes every call idempotent: it
// starts the workflow if none runs, else only signals it.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	Store     *store.Store // the agent queue
}

var serviceKey = temporal.NewSearchAttributeKeyKeyword(SearchAttributeService)

// ServiceChanged asks the service's workflow to reconcile.
func (c Client) ServiceChanged(ctx context.Context, name string) error {
	_, err := c.Temporal.SignalWithStartWorkflow(ctx, ServiceWorkflowID(name), SignalReconcile, nil,
		client.StartWorkflowOptions{
			ID:                    ServiceWorkflowID(name),
			TaskQueue:             c.TaskQueue,
			StaticSummary:         "Service " + name,
			TypedSearchAttributes: temporal.NewSearchAttributes(serviceKey.ValueSet(name)),
		}, ServiceWorkflowName, name)
	return err
}

// AgentsChanged queues the agents' routers for a reconcile and wakes the
// queue's workflow. The queue is in the store, so a mark survives anything
// that happens to Temporal; the worker's resync wakes the workflow again
// if marks wait.
func (c Client) AgentsChanged(ctx context.Context, uuids ...string) error {
	if len(uuids) == 0 {
		return nil
	}
	if err := c.Store.InTx(ctx, func(tx *store.Tx) error { return tx.QueueAgents(ctx, uuids) }); err != nil {
		return err
	}
	return c.WakeAgentQueue(ctx)
}

// WakeAgentQueue signals, or starts, the workflow draining the queue.
func (c Client) WakeAgentQueue(ctx context.Context) error {
	_, err := c.Temporal.SignalWithStartWorkflow(ctx, AgentQueueWorkflowID, SignalReconcile, nil,
		client.StartWorkflowOptions{ID: AgentQueueWorkflowID, TaskQueue: c.TaskQueue, StaticSummary: "Agent router queue"},
		AgentQueueWorkflowName)
	return err
}

// RegisterSearchAttributes adds the ServiceName keyword to the namespace if
// it is missing; the worker calls it at start. On a cluster where svcbridge
// may not change the namespace, an operator adds it once
// (`temporal operator search-attribute create --name ServiceName --type Keyword`).
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	if _, ok := list.GetCustomAttributes()[SearchAttributeService]; ok {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: map[string]enumspb.IndexedValueType{SearchAttributeService: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}
