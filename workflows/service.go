package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svcbridge/activities"
)

// a is only used for its method values: the SDK names activities by them.
var a *activities.Activities

// Fan-out size of one QueueAgents activity (a few statements), and the
// agent queue's window: drainWindow DrainAgents activities of up to
// drainBatch agents each.
const (
	fanoutChunk = 5000
	drainWindow = 4
	drainBatch  = 250
)

// ServiceWorkflow is the entity workflow of one Service (ID service/<name>).
// It reconciles to the current row each time it is signalled, retries a
// failed reconcile with backoff, and ends once the service is deleted and
// its objects are gone.
func ServiceWorkflow(ctx workflow.Context, name string) error {
	state := ServiceState{Service: name, Step: "starting"}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (ServiceState, error) { return state, nil }); err != nil {
		return err
	}
	signals := workflow.GetSignalChannel(ctx, SignalReconcile)
	backoff := retryBackoff
	for i := 0; ; i++ {
		drain(signals)
		state.Reconciles++
		gone, err := reconcileService(ctx, name, &state)
		if gone {
			if drain(signals) {
				continue // recreated meanwhile
			}
			return nil
		}
		wait := time.Duration(0) // until signalled
		if err != nil {
			state.Step, state.LastError = "failed; retrying in "+backoff.String(), err.Error()
			workflow.SetCurrentDetails(ctx, "**failed**: "+err.Error())
			wait = backoff
			backoff = min(2*backoff, maxRetryBackoff)
		} else {
			state.Step, state.LastError = "ready; waiting for changes", ""
			workflow.SetCurrentDetails(ctx, "ready")
			backoff = retryBackoff
		}
		waitForSignal(ctx, signals, wait)
		// A fresh run starts with a reconcile, so a signal consumed here is
		// not lost.
		if i >= maxIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflow.NewContinueAsNewError(ctx, ServiceWorkflowName, name)
		}
	}
}

// reconcileService runs one pass; gone reports that the service is deleted
// and its objects removed.
func reconcileService(ctx workflow.Context, name string, state *ServiceState) (gone bool, err error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         quickRetries,
	})
	state.Step = "planning"
	var plan activities.ServicePlan
	if err := workflow.ExecuteLocalActivity(lctx, a.PlanService, name).Get(ctx, &plan); err != nil {
		return false, err
	}
	finish := activities.Finish{Service: name, Generation: plan.Generation,
		ConnectorSite: plan.ConnectorSite, HubSite: plan.HubSite, Endpoint: plan.Endpoint, Error: plan.Invalid}
	// fail records the first failure of this pass on the service.
	fail := func(step string, err error) (bool, error) {
		if plan.Exists {
			if finish.Error == "" {
				finish.Error = step + ": " + reason(err)
			}
			_ = workflow.ExecuteLocalActivity(lctx, a.FinishService, finish).Get(ctx, nil)
		}
		return false, err
	}

	state.Step = "writing router configs"
	if err := workflow.ExecuteLocalActivity(lctx, a.ReconcileAgents, plan.Sites).Get(ctx, nil); err != nil {
		return fail("write router config", err)
	}
	if plan.Kubernetes && plan.Invalid == "" {
		kctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			// LoadBalancer polling waits up to LB_POLL_ATTEMPTS x LB_POLL_INTERVAL.
			StartToCloseTimeout: 5 * time.Minute,
			RetryPolicy:         quickRetries,
		})
		state.Step = "writing the hub ConfigMap"
		if err := workflow.ExecuteActivity(kctx, a.ReconcileHubConfigMap, name).Get(ctx, nil); err != nil {
			return fail("hub ConfigMap", err)
		}
		state.Step = "reconciling the Kubernetes Service"
		var kr activities.KubeResult
		if err := workflow.ExecuteActivity(kctx, a.ReconcileKubeService, name).Get(ctx, &kr); err != nil {
			return fail("Kubernetes Service", err)
		}
		finish.Endpoint = kr.Endpoint
	}
	if plan.Exists {
		state.Step = "recording status"
		if err := workflow.ExecuteLocalActivity(lctx, a.FinishService, finish).Get(ctx, nil); err != nil {
			return false, err
		}
	}
	if err := fanout(ctx, plan.Fanout, state); err != nil {
		return false, err
	}
	if !plan.Exists {
		return true, nil
	}
	if plan.Invalid != "" {
		return false, temporal.NewNonRetryableApplicationError(plan.Invalid, activities.ErrInvalid, nil)
	}
	return false, nil
}

// quickRetries retries an activity a few times within seconds; longer
// outages are the workflow's backoff, which records the failure first.
var quickRetries = &temporal.RetryPolicy{
	InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
	MaximumInterval: 5 * time.Second, MaximumAttempts: 3,
	NonRetryableErrorTypes: []string{activities.ErrInvalid, activities.ErrNoIngress},
}

// reason is the message of an activity's failure without Temporal's
// wrapping, as the user should read it in provisioningError.
func reason(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// fanout queues the agents whose listeners may change, in chunks, one
// activity per chunk; the agent queue's workflow rebuilds their routers.
func fanout(ctx workflow.Context, agents []string, state *ServiceState) error {
	if len(agents) == 0 {
		return nil
	}
	state.Step = "queueing agents"
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: time.Minute},
	})
	var futures []workflow.Future
	for start := 0; start < len(agents); start += fanoutChunk {
		end := min(start+fanoutChunk, len(agents))
		futures = append(futures, workflow.ExecuteActivity(actx, a.QueueAgents, agents[start:end]))
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// drain empties the signal channel and reports whether it held anything.
func drain(ch workflow.ReceiveChannel) bool {
	got := false
	for ch.ReceiveAsync(nil) {
		got = true
	}
	return got
}

// waitForSignal blocks until a signal arrives, or d passes when d > 0.
func waitForSignal(ctx workflow.Context, ch workflow.ReceiveChannel, d time.Duration) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(ch, func(workflow.ReceiveChannel, bool) {})
	if d > 0 {
		tctx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {})
	}
	sel.Select(ctx)
}

// AgentQueueWorkflow (one, ID agents/queue) drains the queue of agents to
// reconcile: a window of DrainAgents activities at a time, each a batch,
// while batches come back full; then it waits for a signal, or a minute
// for leases that ended. Marks of one agent coalesce in the queue, so many
// services changing at once cost each agent about one router rewrite, and
// thousands of agents cost a handful of activities, far within Temporal's
// limits on pending work and history.
func AgentQueueWorkflow(ctx workflow.Context) error {
	signals := workflow.GetSignalChannel(ctx, SignalReconcile)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
	})
	for round := 0; round < maxIterations; round++ {
		drain(signals)
		for {
			futures := make([]workflow.Future, drainWindow)
			for i := range futures {
				futures[i] = workflow.ExecuteActivity(actx, a.DrainAgents, drainBatch)
			}
			full := true
			for _, f := range futures {
				var n int
				if err := f.Get(ctx, &n); err != nil {
					return err
				}
				full = full && n == drainBatch
			}
			if !full {
				break
			}
		}
		waitForSignal(ctx, signals, time.Minute)
	}
	return workflow.NewContinueAsNewError(ctx, AgentQueueWorkflowName)
}
