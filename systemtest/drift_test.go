package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/store"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

// TestDriftCheckRepairsHandEditedRouters edits router configs behind
// svcbridge's back, runs the drift check, and finds them repaired, with
// every repair counted, and keys svcbridge does not own untouched.
func TestDriftCheckRepairsHandEditedRouters(t *testing.T) {
	s := newSystem(t, "postgres", 1)
	f := newFleet(s)
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, nil)
	s.waitStatus("checkout", "ready")
	// Queued agent reconciles still to run would repair the edits below
	// before the drift check does.
	s.waitFor("the agent queue to drain", time.Minute, func() (bool, string) {
		var n int
		err := s.store.InTx(context.Background(), func(tx *store.Tx) (err error) {
			n, err = tx.QueuedAgentCount(context.Background())
			return err
		})
		return err == nil && n == 0, fmt.Sprintf("%d queued (%v)", n, err)
	})
	wantHub, _ := s.bridges("hub")
	_, wantFog := s.bridges("fog-a")

	ctx := context.Background()
	edit := func(agent, doc string) {
		if err := s.store.InTx(ctx, func(tx *store.Tx) error { return tx.WriteRouter(ctx, agent, store.RouterWrite{Base: []byte(doc)}) }); err != nil {
			t.Fatal(err)
		}
	}
	// Someone drops the hub listener and adds a stray one; someone else
	// changes the connector on fog-a and adds a key of their own.
	edit(f.hub.UUID, `{"bridges":{"tcpListeners":{"stray-listener":{"name":"stray-listener","port":"1","address":"stray"}},"tcpConnectors":{}}}`)
	edit(f.fogA.UUID, `{"bridges":{"tcpConnectors":{"checkout-connector":{"name":"checkout-connector","host":"evil","port":"1","address":"checkout","processId":"x"}},"tcpListeners":{}},"logConfig":{"level":"debug"}}`)
	before := testutil.ToFloat64(metrics.Repairs.WithLabelValues("agent"))

	// As the schedule starts it on the remote control plane.
	run, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "drift-test", TaskQueue: taskQueue}, workflows.DriftWorkflowName, reconcile.DriftCursor{AgentsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("drift check: %v", err)
	}
	gotHub, _ := s.bridges("hub")
	if len(gotHub) != len(wantHub) || string(gotHub["checkout-listener"]) != string(wantHub["checkout-listener"]) {
		t.Errorf("hub listeners after the drift check %v, want %v", gotHub, wantHub)
	}
	_, gotFog := s.bridges("fog-a")
	if string(gotFog["checkout-connector"]) != string(wantFog["checkout-connector"]) {
		t.Errorf("fog-a connector %s, want %s", gotFog["checkout-connector"], wantFog["checkout-connector"])
	}
	if doc := s.router("fog-a"); doc["logConfig"] == nil {
		t.Errorf("the drift check dropped a key svcbridge does not own: %v", doc)
	}
	if got := testutil.ToFloat64(metrics.Repairs.WithLabelValues("agent")) - before; got != 2 {
		t.Errorf("repairs counted %v, want 2", got)
	}
	// Off Kubernetes, the check has no Kubernetes side to page through.
	iter := s.temporal.GetWorkflowHistory(ctx, "drift-test", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() != "DriftCheck" {
			t.Errorf("the remote plane's drift check ran %s", a.GetActivityType().GetName())
		}
	}
}

// TestDriftScheduleFollowsTheSetting creates, updates and deletes the
// Temporal Schedule that runs the drift check.
func TestDriftScheduleFollowsTheSetting(t *testing.T) {
	s := newSystem(t, "sqlite", 0)
	ctx := context.Background()
	every := func() time.Duration {
		d, err := s.temporal.ScheduleClient().GetHandle(ctx, s.wf.DriftSchedule()).Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d.Schedule.Spec.Intervals[0].Every
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 10*time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if got := every(); got != 10*time.Minute {
		t.Errorf("interval %v, want 10m", got)
	}
	// A second worker with another setting updates it instead of failing.
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if got := every(); got != time.Minute {
		t.Errorf("interval %v after the update, want 1m", got)
	}
	// The remote control plane's runs check the agents' routers alone;
	// the Kubernetes control plane's workers make them check the cluster
	// too.
	agentsOnly := func() bool {
		d, err := s.temporal.ScheduleClient().GetHandle(ctx, s.wf.DriftSchedule()).Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var cursor reconcile.DriftCursor
		action, _ := d.Schedule.Action.(*client.ScheduleWorkflowAction)
		if action == nil || len(action.Args) != 1 {
			t.Fatalf("schedule action %#v, want DriftWorkflow with one argument", d.Schedule.Action)
		}
		p, _ := action.Args[0].(*commonpb.Payload)
		if err := converter.GetDefaultDataConverter().FromPayload(p, &cursor); err != nil {
			t.Fatalf("schedule argument %#v: %v", action.Args[0], err)
		}
		return cursor.AgentsOnly
	}
	if !agentsOnly() {
		t.Error("the remote plane's schedule checks the Kubernetes side")
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, time.Minute, true); err != nil {
		t.Fatal(err)
	}
	if agentsOnly() {
		t.Error("the Kubernetes plane's schedule, updated, checks the agents' routers alone")
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.temporal.ScheduleClient().GetHandle(ctx, s.wf.DriftSchedule()).Describe(ctx); err == nil || !strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Errorf("schedule still there after interval 0: %v", err)
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 0, false); err != nil {
		t.Errorf("turning off an absent schedule: %v", err)
	}
}
