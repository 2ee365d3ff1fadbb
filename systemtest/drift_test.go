package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/client"

	"svcbridge/metrics"
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

	run, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "drift-test", TaskQueue: taskQueue}, workflows.DriftWorkflowName, workflows.DriftCursor{})
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
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := every(); got != 10*time.Minute {
		t.Errorf("interval %v, want 10m", got)
	}
	// A second worker with another setting updates it instead of failing.
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := every(); got != time.Minute {
		t.Errorf("interval %v after the update, want 1m", got)
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.temporal.ScheduleClient().GetHandle(ctx, s.wf.DriftSchedule()).Describe(ctx); err == nil || !strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Errorf("schedule still there after interval 0: %v", err)
	}
	if err := temporalclient.EnsureDriftSchedule(ctx, s.temporal, s.wf.IDs, taskQueue, 0); err != nil {
		t.Errorf("turning off an absent schedule: %v", err)
	}
}
