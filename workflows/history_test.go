package workflows_test

import (
	"context"
	"errors"
	"svcbridge/workflows"
	"svcbridge/workflows/pass"
	"svcbridge/workflows/temporalclient"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
)

// TestFailedPassesAreFailureEventsInTheHistory runs the service workflow on
// a real Temporal server, with activities that fail the way a broken
// router write does: the fast path fails, its retry twice, then it
// succeeds. The history, which the Web UI draws, holds two
// ActivityTaskFailed events with provisioningError's message and the
// failure's type, and each retry's summary counts the attempts.
func TestFailedPassesAreFailureEventsInTheHistory(t *testing.T) {
	defer func(d time.Duration) { *workflows.RetryBackoff = d }(*workflows.RetryBackoff)
	*workflows.RetryBackoff = 10 * time.Millisecond // the backoff's length is not what is tested
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	ctx := context.Background()
	if err := temporalclient.RegisterSearchAttributes(ctx, c, ts.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	const reason = "write router config: agent hub: database is down"
	var retries atomic.Int32
	w := worker.New(c, "history-test", worker.Options{})
	workflows.Register(w)
	for name, fn := range map[string]any{
		"PlanService": func(context.Context, string) (pass.Plan, error) {
			return pass.Plan{Exists: true, Generation: 1, Sites: []string{"hub"}, ConnectorSite: "hub", HubSite: "hub"}, nil
		},
		"ReconcileAgents": func(context.Context, string, []string) error { return errors.New("agent hub: database is down") },
		"FinishService":   func(context.Context, pass.Finish) (string, error) { return "", nil },
		"ReconcileService": func(ctx context.Context, _ string) (pass.Outcome, error) {
			if activity.GetInfo(ctx).Attempt != 1 {
				t.Errorf("ReconcileService attempt %d: Temporal retried it", activity.GetInfo(ctx).Attempt)
			}
			if retries.Add(1) <= 2 {
				return pass.Outcome{Planned: true, Exists: true}, temporal.NewApplicationError(reason, pass.TypeRouterWriteFailed)
			}
			return pass.Outcome{Planned: true, Exists: true}, nil
		},
	} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	id := "svcbridge/service/checkout"
	cl := temporalclient.Client{Temporal: c, TaskQueue: "history-test", IDs: workflows.IDs{Prefix: "svcbridge/"}}
	if err := cl.ServiceCreated(ctx, "checkout"); err != nil {
		t.Fatal(err)
	}

	// Wait for the pass that succeeds.
	var state workflows.ServiceState
	for deadline := time.Now().Add(time.Minute); state.Step != "ready; waiting for changes"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workflow never became ready: %+v", state)
		}
		if v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState); err == nil {
			_ = v.Get(&state)
		}
	}

	var failed []*historypb.ActivityTaskFailedEventAttributes
	var summaries []string
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f := e.GetActivityTaskFailedEventAttributes(); f != nil {
			failed = append(failed, f)
		}
		if s := e.GetActivityTaskScheduledEventAttributes(); s.GetActivityType().GetName() == "ReconcileService" {
			var summary string
			if err := converter.GetDefaultDataConverter().FromPayload(e.GetUserMetadata().GetSummary(), &summary); err != nil {
				t.Fatal(err)
			}
			summaries = append(summaries, summary)
		}
	}
	if len(failed) != 2 {
		t.Fatalf("%d ActivityTaskFailed events, want 2", len(failed))
	}
	for _, f := range failed {
		if f.GetFailure().GetMessage() != reason || f.GetFailure().GetApplicationFailureInfo().GetType() != pass.TypeRouterWriteFailed {
			t.Errorf("failure %v, want %q of type %s", f.GetFailure(), reason, pass.TypeRouterWriteFailed)
		}
	}
	// The fast path's failure was attempt 1.
	if len(summaries) != 3 || summaries[0][:43] != "Reconcile service checkout: attempt 2, fail" || summaries[2][:38] != "Reconcile service checkout: attempt 4," {
		t.Errorf("ReconcileService summaries %q, want attempts 2 to 4", summaries)
	}
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if memo := d.GetWorkflowExecutionInfo().GetMemo().GetFields(); len(memo) != 0 {
		t.Errorf("memo %v once ready, want the failure streak gone", memo)
	}
}
