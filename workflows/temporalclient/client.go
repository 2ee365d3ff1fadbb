// Package temporalclient makes svcbridge's calls on the Temporal client:
// it starts and signals the workflows (signal-with-start), keeps the drift
// check's schedule, adds the namespace's search attributes and reads the
// task queue's pollers. These are I/O, so they stay out of package
// workflows, whose code must be deterministic.
package temporalclient

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/workflows"
)

// Client starts and signals the workflows (package trigger adds the agent
// queue in the store). Signal-with-start makes every call idempotent: it
// starts the workflow if none runs, else only signals it.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	workflows.IDs
}

// ServiceChanged asks the service's workflow to reconcile.
func (c Client) ServiceChanged(ctx context.Context, name string) error {
	_, err := c.Temporal.SignalWithStartWorkflow(ctx, c.Service(name), workflows.SignalReconcile, workflows.SignalFromSvcbridge,
		c.ServiceStart(name), workflows.ServiceWorkflowName, reconcile.ServiceInput{Name: name})
	return err
}

// ServiceCreated starts the workflow of a service just created; its first
// run reconciles without a signal. Where a worker shares this client (dev),
// the start asks for the first workflow task in its answer: it skips the
// server's matching and a history write, which is a fill's bottleneck on
// the embedded server. A workflow of the name still running (a deleted
// service's, removing its objects) is signalled instead.
func (c Client) ServiceCreated(ctx context.Context, name string) error {
	opts := c.ServiceStart(name)
	opts.EnableEagerStart = true
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	_, err := c.Temporal.ExecuteWorkflow(ctx, opts, workflows.ServiceWorkflowName, reconcile.ServiceInput{Name: name})
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &running) {
		return c.ServiceChanged(ctx, name)
	}
	return err
}

// ServiceStart is how a service's workflow is started.
func (c Client) ServiceStart(name string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:            c.Service(name),
		TaskQueue:     c.TaskQueue,
		StaticSummary: "Service " + name,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.ServiceKey.ValueSet(name),
			workflows.StatusKey.ValueSet(service.StatusPending)),
	}
}

// WakeAgentQueue signals, or starts, the workflow draining the queue.
func (c Client) WakeAgentQueue(ctx context.Context) error {
	id := c.AgentQueue()
	_, err := c.Temporal.SignalWithStartWorkflow(ctx, id, workflows.SignalReconcile, nil,
		client.StartWorkflowOptions{ID: id, TaskQueue: c.TaskQueue, StaticSummary: "Agent router queue"},
		workflows.AgentQueueWorkflowName, reconcile.AgentQueueInput{})
	return err
}

// RegisterSearchAttributes adds the Keyword attributes ServiceName and
// ProvisioningStatus to the namespace where they are missing; the worker
// calls it at start. On a cluster where svcbridge may not change the
// namespace, an operator adds them once (see the README).
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range workflows.SearchAttributes {
		if _, ok := list.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}
