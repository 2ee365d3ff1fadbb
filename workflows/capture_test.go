package workflows_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/dynamicconfig"
	temporalserver "go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"svcbridge/reconcile"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

// These tests run the service workflow on a real Temporal server with
// activities registered by name that return canned results: they test the
// workflow's commands on the branches the system tests do not capture,
// and, when SVCBRIDGE_CAPTURE_HISTORIES names a directory
// (workflows/testdata), write the histories the replay test replays.

const testQueue = "history-test"

// startWorkflows starts a Temporal server with svcbridge's search
// attributes and a worker running the workflows and the given activities;
// it returns the client that starts and signals them.
func startWorkflows(t *testing.T, timing workflows.Timing, acts map[string]any, opts ...temporaltest.TestServerOption) temporalclient.Client {
	t.Helper()
	ts := temporaltest.NewServer(append([]temporaltest.TestServerOption{temporaltest.WithT(t)}, opts...)...)
	c := ts.GetDefaultClient()
	if err := temporalclient.RegisterSearchAttributes(context.Background(), c, ts.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, testQueue, worker.Options{})
	workflows.Register(w, timing)
	for name, fn := range acts {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return temporalclient.Client{Temporal: c, TaskQueue: testQueue, IDs: workflows.IDs{}}
}

// waitStep waits until the service workflow's current run says step.
func waitStep(t *testing.T, c client.Client, id, step string) {
	t.Helper()
	var state workflows.ServiceState
	for deadline := time.Now().Add(time.Minute); state.Step != step; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workflow never said %q: %+v", step, state)
		}
		if v, err := c.QueryWorkflow(context.Background(), id, "", workflows.QueryState); err == nil {
			_ = v.Get(&state)
		}
	}
}

// history reads the history of one run (runID "": the current one).
func history(t *testing.T, c client.Client, id, runID string) *historypb.History {
	t.Helper()
	var h historypb.History
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	return &h
}

// capture writes h, when SVCBRIDGE_CAPTURE_HISTORIES names a directory,
// as the replay test names it: after its workflow ID, path-escaped.
func capture(t *testing.T, id string, h *historypb.History) {
	dir := os.Getenv("SVCBRIDGE_CAPTURE_HISTORIES")
	if dir == "" {
		return
	}
	file := filepath.Join(dir, url.PathEscape(id)+".json")
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("captured the history of %s in %s", id, file)
}

// The fast path is one local activity a pass: one marker in the history
// (and the change's version marker once), no step of its own.
func TestFastPathIsOneLocalActivity(t *testing.T) {
	var passes atomic.Int32
	cl := startWorkflows(t, workflows.Timing{}, map[string]any{
		"ReconcileService": func(ctx context.Context, _ string) (reconcile.Outcome, error) {
			if !activity.GetInfo(ctx).IsLocalActivity {
				t.Error("the fast path ran a regular activity")
			}
			if passes.Add(1) == 2 {
				return reconcile.Outcome{Planned: true, Gone: true}, nil
			}
			return reconcile.Outcome{Planned: true, Exists: true}, nil
		},
	})
	ctx := context.Background()
	if err := cl.ServiceCreated(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	id := cl.Service("gone")
	waitStep(t, cl.Temporal, id, "ready; waiting for changes")
	if err := cl.ServiceChanged(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("the deleted service's workflow: %v", err)
	}
	markers := map[string]int{}
	for _, e := range history(t, cl.Temporal, id, "").GetEvents() {
		if m := e.GetMarkerRecordedEventAttributes(); m != nil {
			markers[m.GetMarkerName()]++
		}
		if e.GetActivityTaskScheduledEventAttributes() != nil {
			t.Errorf("a pass scheduled activity %s", e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	if markers["LocalActivity"] != 2 || markers["Version"] != 1 {
		t.Errorf("markers %v, want a local activity for each of the 2 passes and one version", markers)
	}
}

// A failing service's workflow continues as new when Temporal suggests it
// (here after a few events) and carries the failure streak to the next
// run, which goes on retrying where the last left off.
func TestContinueAsNewCarriesTheFailureStreak(t *testing.T) {
	var fixed atomic.Bool
	failure := temporal.NewApplicationError("write router config: agent hub: database is down", reconcile.TypeRouterWriteFailed)
	cl := startWorkflows(t, shortBackoff, map[string]any{
		"ReconcileService": func(context.Context, string) (reconcile.Outcome, error) {
			if fixed.Load() {
				return reconcile.Outcome{Planned: true, Exists: true}, nil
			}
			return reconcile.Outcome{Planned: true, Exists: true}, failure
		},
	}, temporaltest.WithBaseServerOptions(temporalserver.WithDynamicConfigClient(dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		dynamicconfig.HistoryCountSuggestContinueAsNew.Key():        20,
	})))
	ctx := context.Background()
	if err := cl.ServiceCreated(ctx, "continued"); err != nil {
		t.Fatal(err)
	}
	id := cl.Service("continued")
	first, err := cl.Temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	firstRun := first.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failing workflow never continued as new")
		}
		d, err := cl.Temporal.DescribeWorkflowExecution(ctx, id, "")
		if err == nil && d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != firstRun {
			break
		}
	}
	fixed.Store(true)
	waitStep(t, cl.Temporal, id, "ready; waiting for changes")

	h := history(t, cl.Temporal, id, firstRun)
	last := h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes()
	var in reconcile.ServiceInput
	if last == nil || converter.GetDefaultDataConverter().FromPayloads(last.GetInput(), &in) != nil {
		t.Fatalf("the first run ended with %v, want continued as new", h.Events[len(h.Events)-1].GetEventType())
	}
	if in.Name != "continued" || in.Failing.Attempts < 2 || in.Failing.Since.IsZero() {
		t.Errorf("continued as new with %+v, want the failure streak", in)
	}
	capture(t, id, h)
}
