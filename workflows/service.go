package workflows

import (
	"errors"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svcbridge/reconcile"
	"svcbridge/service"
)

// Fan-out size of one QueueAgents activity (recorded plans), and the
// agent queue's window: drainWindow AgentBatchWorkflow children of up to
// drainBatch agents each.
const (
	fanoutChunk = 5000
	drainWindow = 4
	drainBatch  = 500
)

// ServiceWorkflow is the entity workflow of one Service (ID
// <prefix>service/<name>). Each time it is signalled it reconciles to the
// current row on a fast path, the pass as one local activity. When a pass fails it
// records the failure (status row, ProvisioningStatus, current details,
// memo) and runs the next passes as regular activities of one attempt
// each, with its own backoff that a reconcile signal cuts short: every
// failed pass is then an ActivityTaskFailed event, which the Web UI shows
// in red with provisioningError's message, and the failure streak (since
// when, how many passes) survives signals and continue-as-new. It ends
// once the service is deleted and its objects are gone.
func (t Timing) ServiceWorkflow(ctx workflow.Context, in reconcile.ServiceInput) error {
	state := ServiceState{Service: in.Name, Step: "starting"}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (ServiceState, error) { return state, nil }); err != nil {
		return err
	}
	signals := workflow.GetSignalChannel(ctx, SignalReconcile)
	status := service.StatusPending // as the client started it
	for i := 0; ; i++ {
		// A fresh run starts with a reconcile, so a signal consumed before
		// continuing as new is not lost.
		if i >= t.MaxIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflow.NewContinueAsNewError(ctx, ServiceWorkflowName, in)
		}
		if n := takeSignals(signals); n > 0 && failureEvents(ctx) {
			recordSignals(ctx, in.Name, n)
		}
		state.Reconciles++
		var out reconcile.Outcome
		var err error
		if in.Failing.Attempts == 0 {
			out, err = fastPass(ctx, &state, in.Name)
		} else {
			out, err = passActivity(ctx, in.Name, in.Failing)
		}
		if err != nil && !failureEvents(ctx) {
			// A run begun before reconcile.ChangeFailureEvents: Temporal retries.
			status = t.report(ctx, &state, status, out, err)
			if out, err = t.retryPass(ctx, signals, in.Name); errors.Is(err, errSignalled) {
				continue // reconcile at once, on the fast path
			}
		}
		if err != nil && failureEvents(ctx) {
			in.Failing = failed(in.Failing, workflow.Now(ctx))
			state.Failing = in.Failing
			status = t.report(ctx, &state, status, out, err)
			upsertFailing(ctx, in.Failing)
			if wait := t.retryWait(in.Failing.Attempts); wait > 0 {
				// The timer's summary, on the timeline beside the red
				// failure, is what failed, word for word.
				waitForSignal(ctx, signals, wait, state.LastError+" (retry in "+wait.String()+")")
			}
			continue
		}
		if in.Failing.Attempts > 0 {
			in.Failing, state.Failing = reconcile.FailureStreak{}, reconcile.FailureStreak{}
			upsertFailing(ctx, in.Failing)
		}
		status = t.report(ctx, &state, status, out, err)
		if out.Gone {
			if drain(signals) {
				continue // recreated meanwhile
			}
			return nil
		}
		waitForSignal(ctx, signals, 0, "")
	}
}

// failureEvents reports whether the run takes reconcile.ChangeFailureEvents.
// It is asked where the two handlings first differ (a failed pass, a
// signal from outside), so a run that never failed takes the new handling
// at its next failure.
func failureEvents(ctx workflow.Context) bool { return takes(ctx, reconcile.ChangeFailureEvents) }

// takes reports whether the run takes change c: a run begun before c
// replays without it. Every workflow.GetVersion is asked here, of a change
// in reconcile.Changes, which names the histories that cover it.
func takes(ctx workflow.Context, c reconcile.Change) bool {
	v := workflow.Version(c.Version)
	return workflow.GetVersion(ctx, c.ID, workflow.DefaultVersion, v) == v
}

// fastPass runs a pass on the fast path: the whole pass as one local
// activity (reconcile.ChangeOneLocalPass), with no round trip through the
// server and one marker in the history, but for a fan-out, which it
// queues in a regular activity (a dead worker's is resumed elsewhere).
// Runs begun before it run each step as its own activity.
func fastPass(ctx workflow.Context, state *ServiceState, name string) (reconcile.Outcome, error) {
	if !takes(ctx, reconcile.ChangeOneLocalPass) {
		return reconcile.Run(localSteps{ctx: ctx, state: state}, name)
	}
	state.Step = "reconciling"
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// As the retried pass's: it may wait for a LoadBalancer's ingress
		// while the SDK keeps the workflow task alive. A dead worker's
		// pass runs again on another once the workflow task times out;
		// each step is idempotent. An attempt that fails records its
		// failure; the next, within a second or two, records what it
		// finds.
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         quickRetries,
	})
	var out reconcile.Outcome
	err := workflow.ExecuteLocalActivity(lctx, reconcile.ActivityReconcileService, name).Get(ctx, &out)
	if err != nil {
		out = reconcile.OutcomeOf(err)
	}
	if out.FanoutLeft {
		state.Step = "queueing agents"
		if qerr := workflow.ExecuteActivity(fanoutOptions(ctx), reconcile.ActivityQueueFanout, name).Get(ctx, nil); qerr != nil && err == nil {
			err = reconcile.FanoutFailed(out, qerr)
		}
	}
	return out, err
}

// passActivity runs one reconcile pass of a failing service as a regular
// activity of a single attempt: its failure is an ActivityTaskFailed event
// carrying provisioningError's message and what failed as its type. Its
// summary, on the Web UI's timeline, says which attempt it is and since
// when the service fails.
func passActivity(ctx workflow.Context, name string, failing reconcile.FailureStreak) (out reconcile.Outcome, err error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    reconcile.PassHeartbeat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             summary(failing, name),
	})
	if err = workflow.ExecuteActivity(actx, reconcile.ActivityReconcileService, name).Get(ctx, &out); err != nil {
		out = reconcile.OutcomeOf(err)
	}
	return out, err
}

// upsertFailing shows the failure streak in the workflow's memo (the Web
// UI's Memo tab, and visibility); a streak that ended removes it.
func upsertFailing(ctx workflow.Context, f reconcile.FailureStreak) {
	memo := map[string]any{MemoFailingSince: nil, MemoFailedAttempts: nil}
	if f.Attempts > 0 {
		memo[MemoFailingSince], memo[MemoFailedAttempts] = f.Since.UTC().Format(time.RFC3339), f.Attempts
	}
	// Only a failure to encode; the memo would merely lag.
	_ = workflow.UpsertMemo(ctx, memo)
}

// recordSignals records n reconcile signals sent outside svcbridge (the
// Web UI's Send a Signal) as reconcile requests, as the API records its
// own, before the pass that answers them. A failure to record is logged:
// the reconcile goes on.
func recordSignals(ctx workflow.Context, name string, n int) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         quickRetries,
	})
	if err := workflow.ExecuteLocalActivity(lctx, reconcile.ActivityRecordSignalledReconcile, name, n).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not record a reconcile signal", "service", name, "error", err)
	}
}

// statusDeleting is the status of a deleted service whose objects remain.
const statusDeleting = "deleting"

// provisioningStatus is the ProvisioningStatus a pass's outcome shows; a
// pass that could not read the service leaves the last one.
func provisioningStatus(last string, out reconcile.Outcome, err error) string {
	switch {
	case !out.Planned:
		return last
	case !out.Exists:
		return statusDeleting
	case err != nil:
		return service.StatusFailed
	}
	return service.StatusReady
}

// report shows a pass's outcome: in the query state, in the current details
// (the failure first, as provisioningError words it, with the streak when
// the workflow retries it) and, when it changed, in the ProvisioningStatus
// search attribute. It returns the status.
func (t Timing) report(ctx workflow.Context, state *ServiceState, last string, out reconcile.Outcome, err error) string {
	status := provisioningStatus(last, out, err)
	if err != nil {
		state.Step, state.LastError = status+"; "+t.retrying(state.Failing), reconcile.Reason(err)
		workflow.SetCurrentDetails(ctx, "**"+status+"**: "+state.LastError+details(state.Failing))
	} else {
		state.Step, state.LastError = status+"; waiting for changes", ""
		workflow.SetCurrentDetails(ctx, status)
	}
	if status != last {
		// Only a failure to encode; the UI would merely show an old status.
		_ = workflow.UpsertTypedSearchAttributes(ctx, StatusKey.ValueSet(status))
	}
	return status
}

// errSignalled ends a retry early: a reconcile signal arrived.
var errSignalled = errors.New("reconcile signalled")

// retryPass runs the whole pass as one activity until it succeeds, with
// Temporal's retry policy (its attempts and last failure are what the Web
// UI shows), or until a reconcile signal cancels it.
func (t Timing) retryPass(ctx workflow.Context, signals workflow.ReceiveChannel, name string) (reconcile.Outcome, error) {
	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    reconcile.PassHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: t.RetryBackoff, BackoffCoefficient: 2,
			MaximumInterval: t.MaxRetryBackoff}, // unlimited attempts
		Summary: "Retry the reconcile of service " + name,
	})
	var out reconcile.Outcome
	var err error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.ExecuteActivity(actx, reconcile.ActivityReconcileService, name), func(f workflow.Future) { err = f.Get(ctx, &out) })
	// The signal stays in the channel; the next pass drains it.
	sel.AddReceive(signals, func(workflow.ReceiveChannel, bool) { err = errSignalled })
	sel.Select(ctx)
	return out, err
}

// localSteps runs the steps of reconcile.Run as local activities, and the
// Kubernetes step, which may wait for a LoadBalancer, as a regular
// activity: the fast path of runs begun before reconcile.ChangeOneLocalPass.
type localSteps struct {
	ctx   workflow.Context
	state *ServiceState
}

func (l localSteps) local() workflow.Context {
	return workflow.WithLocalActivityOptions(l.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         quickRetries,
	})
}

func (l localSteps) Step(what string) { l.state.Step = what }

func (l localSteps) Plan(name string) (plan reconcile.Plan, err error) {
	err = workflow.ExecuteLocalActivity(l.local(), reconcile.ActivityPlanService, name).Get(l.ctx, &plan)
	return plan, err
}

func (l localSteps) ReconcileAgents(name string, sites []string) error {
	return workflow.ExecuteLocalActivity(l.local(), reconcile.ActivityReconcileAgents, name, sites).Get(l.ctx, nil)
}

func (l localSteps) Kube(name string) (endpoint *string, err error) {
	kctx := workflow.WithActivityOptions(l.ctx, workflow.ActivityOptions{
		// LoadBalancer polling waits up to LB_POLL_ATTEMPTS x LB_POLL_INTERVAL.
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    reconcile.PassHeartbeat,
		RetryPolicy:         quickRetries,
	})
	var kr reconcile.KubeResult
	err = workflow.ExecuteActivity(kctx, reconcile.ActivityReconcileKube, name).Get(l.ctx, &kr)
	return kr.Endpoint, err
}

func (l localSteps) Finish(f reconcile.Finish) (missing string, err error) {
	err = workflow.ExecuteLocalActivity(l.local(), reconcile.ActivityFinishService, f).Get(l.ctx, &missing)
	return missing, err
}

// Queue has the store queue the pass's fan-out in one activity. A plan
// recorded by an older release lists the agents; its history replays
// their chunks. Which path runs depends only on the recorded plan, so no
// workflow.GetVersion is needed.
func (l localSteps) Queue(name string, recorded []string) error {
	if recorded != nil {
		return fanout(l.ctx, recorded)
	}
	return workflow.ExecuteActivity(fanoutOptions(l.ctx), reconcile.ActivityQueueFanout, name).Get(l.ctx, nil)
}

// quickRetries retries a step a few times within seconds; longer outages
// are the retried whole pass's, which records the failure first.
var quickRetries = &temporal.RetryPolicy{
	InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
	MaximumInterval: 5 * time.Second, MaximumAttempts: 3,
	NonRetryableErrorTypes: []string{reconcile.TypeInvalidPlacement, reconcile.TypeNoIngress},
}

// fanoutOptions are the queue step's activity options.
func fanoutOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		// A dead worker's fan-out is taken over elsewhere within seconds.
		HeartbeatTimeout: reconcile.FanoutHeartbeat,
		RetryPolicy:      &temporal.RetryPolicy{MaximumInterval: time.Minute},
	})
}

// fanout queues the agents a recorded plan listed, one activity per
// chunk; the agent queue's workflow rebuilds their routers.
func fanout(ctx workflow.Context, agents []string) error {
	actx := fanoutOptions(ctx)
	var futures []workflow.Future
	for start := 0; start < len(agents); start += fanoutChunk {
		end := min(start+fanoutChunk, len(agents))
		futures = append(futures, workflow.ExecuteActivity(actx, reconcile.ActivityQueueAgents, agents[start:end]))
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

// takeSignals empties the service workflow's signal channel and returns
// how many of its signals svcbridge did not send (see SignalFromSvcbridge).
// Payloads are taken raw, so that no input, whatever it is, loses a
// signal.
func takeSignals(ch workflow.ReceiveChannel) (outside int) {
	var v converter.RawValue
	for ch.ReceiveAsync(&v) {
		if !fromSvcbridge(v.Payload()) {
			outside++
		}
		v = converter.RawValue{}
	}
	return outside
}

// fromSvcbridge reports whether a reconcile signal's payload is the one
// svcbridge's client sends.
func fromSvcbridge(p *commonpb.Payload) bool {
	var s string
	return p != nil && converter.GetDefaultDataConverter().FromPayload(p, &s) == nil && s == SignalFromSvcbridge
}

// waitForSignal blocks until a signal arrives, or d passes when d > 0; the
// timer shows summary on the Web UI's timeline.
func waitForSignal(ctx workflow.Context, ch workflow.ReceiveChannel, d time.Duration, summary string) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(ch, func(workflow.ReceiveChannel, bool) {})
	if d > 0 {
		tctx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		sel.AddFuture(workflow.NewTimerWithOptions(tctx, d, workflow.TimerOptions{Summary: summary}), func(workflow.Future) {})
	}
	sel.Select(ctx)
}
