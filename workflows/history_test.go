package workflows_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"svcbridge/reconcile"
	"svcbridge/workflows"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// TestFailedPassesAreFailureEventsInTheHistory runs the service workflow on
// a real Temporal server, with activities that fail the way a broken
// router write does: the fast path fails, its retry twice, then it
// succeeds. The history, which the Web UI draws, holds two
// ActivityTaskFailed events with provisioningError's message and the
// failure's type, and each retry's summary counts the attempts.
func TestFailedPassesAreFailureEventsInTheHistory(t *testing.T) {
	const reason = "write router config: agent hub: database is down"
	var retries atomic.Int32
	failure := temporal.NewApplicationError(reason, reconcile.TypeRouterWriteFailed, reconcile.Outcome{Planned: true, Exists: true})
	cl := startWorkflows(t, shortBackoff, map[string]any{
		"ReconcileService": func(ctx context.Context, _ string) (reconcile.Outcome, error) {
			if activity.GetInfo(ctx).IsLocalActivity {
				return reconcile.Outcome{}, failure // the fast path, each of its attempts
			}
			if activity.GetInfo(ctx).Attempt != 1 {
				t.Errorf("ReconcileService attempt %d: Temporal retried it", activity.GetInfo(ctx).Attempt)
			}
			if retries.Add(1) <= 2 {
				return reconcile.Outcome{}, failure
			}
			return reconcile.Outcome{Planned: true, Exists: true}, nil
		},
	})
	c, ctx := cl.Temporal, context.Background()
	id := cl.Service("checkout")
	if err := cl.ServiceCreated(ctx, "checkout"); err != nil {
		t.Fatal(err)
	}
	// Wait for the pass that succeeds.
	waitStep(t, c, id, "ready; waiting for changes")

	var failed []*historypb.ActivityTaskFailedEventAttributes
	var summaries []string
	for _, e := range history(t, c, id, "").GetEvents() {
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
		if f.GetFailure().GetMessage() != reason || f.GetFailure().GetApplicationFailureInfo().GetType() != reconcile.TypeRouterWriteFailed {
			t.Errorf("failure %v, want %q of type %s", f.GetFailure(), reason, reconcile.TypeRouterWriteFailed)
		}
	}
	// The fast path's failure was attempt 1.
	if len(summaries) != 3 || !strings.HasPrefix(summaries[0], "Reconcile service checkout: attempt 2, after 1 failed since ") || summaries[2][:38] != "Reconcile service checkout: attempt 4," {
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

// shortBackoff is the timing of the tests that wait out failed passes:
// the backoff's length is not what they test.
var shortBackoff = workflows.Timing{RetryBackoff: 10 * time.Millisecond}
