package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/server/temporaltest"

	"svcbridge/activities"
	"svcbridge/reconcile"
	"svcbridge/store"
	"svcbridge/workflows"
)

// These tests read through Temporal's own API what an operator sees in the
// Web UI: the failed-services query, the failing step with its message,
// and the retry.

// failingService sets up what the README walkthrough shows: a service
// whose backend's agent loses its router (routerMode none). It returns the
// message provisioningError carries; fixService gives the router back.
func failingService(s *system) string {
	s.t.Helper()
	s.agent(map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}})
	s.microservice(map[string]any{"uuid": checkoutUUID, "application": "orders", "name": "checkout", "agent": "fog-a"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, nil)
	s.waitStatus("checkout", "ready")
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}, nil)
	return *s.waitStatus("checkout", "failed").ProvisioningError
}

func fixService(s *system) {
	s.t.Helper()
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "edge", "upstreamRouters": []string{"hub"}}, nil)
}

// listIDs lists the workflow IDs a visibility query finds.
func (s *system) listIDs(query string) []string {
	s.t.Helper()
	resp, err := s.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	if err != nil {
		s.t.Fatalf("list %q: %v", query, err)
	}
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids
}

// waitListed waits until query lists exactly the workflow id (visibility
// is written asynchronously).
func (s *system) waitListed(query, id string) {
	s.t.Helper()
	s.waitFor(query+" lists "+id, 30*time.Second, func() (bool, string) {
		ids := s.listIDs(query)
		return len(ids) == 1 && ids[0] == id, fmt.Sprint(ids)
	})
}

func TestFailedServiceInTemporalVisibility(t *testing.T) {
	s := newSystem(t, "sqlite", 1)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	reason := failingService(s)
	id := s.wf.Service("checkout")

	// Find: the failed filter lists it.
	s.waitListed(`ProvisioningStatus="failed"`, id)

	// Understand: each failed pass is a failure event with
	// provisioningError's message and what failed as its type, and the
	// memo says since when and how many passes failed.
	s.waitFor("two failure events and the streak in the memo", 30*time.Second, func() (bool, string) {
		n := s.failureEvents(id, reason, "InvalidPlacement")
		d, err := s.temporal.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err.Error()
		}
		memo := d.GetWorkflowExecutionInfo().GetMemo().GetFields()
		var attempts int
		var since string
		dc := converter.GetDefaultDataConverter()
		if dc.FromPayload(memo[workflows.MemoFailedAttempts], &attempts) != nil || dc.FromPayload(memo[workflows.MemoFailingSince], &since) != nil {
			return false, fmt.Sprint(memo)
		}
		return n >= 2 && attempts >= n && since != "", fmt.Sprintf("%d failure events, memo %d attempts since %q", n, attempts, since)
	})
	// A signal sent as the Web UI sends it (no input) is a reconcile
	// request, with its event.
	if err := s.temporal.SignalWorkflow(context.Background(), id, "", workflows.SignalReconcile, nil); err != nil {
		t.Fatal(err)
	}
	s.waitSignalledEvent("checkout")
	if !strings.Contains(reason, "routerMode none") {
		t.Errorf("provisioningError %q does not say why", reason)
	}

	// Retry: fix the cause, ask for a reconcile; the history shows the
	// signal and the list shows it ready.
	fixService(s)
	s.must(http.StatusAccepted, "POST", "/api/v3/services/checkout/reconcile", nil, nil)
	s.waitStatus("checkout", "ready")
	s.waitListed(`ProvisioningStatus="ready" AND ServiceName="checkout"`, id)
	if ids := s.listIDs(`ProvisioningStatus="failed"`); len(ids) != 0 {
		t.Errorf("still listed as failed: %v", ids)
	}
	signals := s.signalCount(id)
	if signals < 2 { // the agent's change and the POST
		t.Errorf("%d reconcile signals in the history, want the agent change's and the POST's", signals)
	}
	captureHistories(s)
}

// captureHistories writes, when SVCBRIDGE_CAPTURE_HISTORIES names a
// directory (workflows/testdata), the histories of one run of each
// workflow type, which workflows' replay test replays. A drift check runs
// first for its own.
func captureHistories(s *system) {
	dir := os.Getenv("SVCBRIDGE_CAPTURE_HISTORIES")
	if dir == "" {
		return
	}
	ctx := context.Background()
	drift, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.wf.Prefix + "drift-capture", TaskQueue: s.wf.TaskQueue},
		workflows.DriftWorkflowName, reconcile.DriftCursor{})
	if err == nil {
		err = drift.Get(ctx, nil)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	// The file name is the workflow ID (path-escaped), which the replay
	// needs: the agent queue names its children after its own ID.
	for _, id := range []string{s.wf.Service("checkout"), s.wf.AgentQueue(), s.wf.AgentQueue() + "/batch-0", drift.GetID()} {
		file := url.PathEscape(id) + ".json"
		var h historypb.History
		iter := s.temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				s.t.Fatal(err)
			}
			h.Events = append(h.Events, e)
		}
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, file), b, 0o644)
		}
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Logf("captured the history of %s in %s", id, filepath.Join(dir, file))
	}
}

// failureEvents counts the ActivityTaskFailed events of a workflow whose
// failure has message and type.
func (s *system) failureEvents(id, message, typ string) int {
	s.t.Helper()
	n := 0
	iter := s.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		f := e.GetActivityTaskFailedEventAttributes().GetFailure()
		if f.GetMessage() == message && f.GetApplicationFailureInfo().GetType() == typ {
			n++
		}
	}
	return n
}

// waitSignalledEvent waits for the event of a reconcile signal sent
// outside svcbridge.
func (s *system) waitSignalledEvent(name string) {
	s.t.Helper()
	s.waitFor("the signal's reconcile request event", 30*time.Second, func() (bool, string) {
		var events []store.Event
		err := s.store.Read(context.Background(), func(tx *store.Tx) (err error) {
			events, err = tx.ListEvents(context.Background(), name, nil, 0)
			return err
		})
		for _, e := range events {
			if e.Reason == store.ReasonReconcileRequested && e.Message == activities.SignalledReconcileMessage {
				return true, ""
			}
		}
		return false, fmt.Sprint(events, err)
	})
}

// signalCount counts the reconcile signals in a workflow's history.
func (s *system) signalCount(id string) int {
	s.t.Helper()
	return s.signalsFrom(id, "")
}

// signalsFrom counts the reconcile signals in a workflow's history that
// the client identity sent ("": any client).
func (s *system) signalsFrom(id, identity string) int {
	s.t.Helper()
	n := 0
	iter := s.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a.GetSignalName() == "reconcile" && (identity == "" || a.GetIdentity() == identity) {
			n++
		}
	}
	return n
}

// Two installations with their own prefix and task queue share one
// namespace: the same service name converges in both.
func TestTwoInstallationsShareANamespace(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	var systems []*system
	for _, name := range []string{"east", "west"} {
		s := newSystem(t, "sqlite", 1, sharing(ts, name+"/", "svcbridge-"+name))
		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": name + ".example.com"})
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "payments", "type": "external", "resource": "203.0.113.20", "targetPort": 443}, nil)
		systems = append(systems, s)
	}
	for _, s := range systems {
		got := s.waitStatus("payments", "ready")
		if want := s.wf.Service("payments"); got.WorkflowID != want {
			t.Errorf("workflowId %q, want %q", got.WorkflowID, want)
		}
		if _, err := s.temporal.DescribeWorkflowExecution(context.Background(), got.WorkflowID, ""); err != nil {
			t.Errorf("workflow %s: %v", got.WorkflowID, err)
		}
		s.waitListed(`ProvisioningStatus="ready" AND WorkflowId STARTS_WITH "`+s.wf.Prefix+`"`, got.WorkflowID)
	}
}

// TestFailedAgentWriteRetriedSoon: an agent whose router config cannot be
// rewritten (it is not JSON) fails its batch, which the Web UI lists as a
// failed AgentBatchWorkflow; once the config is mended, a batch a few
// seconds later writes the listener, not one when the claim's lease ends.
func TestFailedAgentWriteRetriedSoon(t *testing.T) {
	s := newSystem(t, store.Postgres, 1)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	fog := s.agent(map[string]any{"name": "fog-x", "tags": []string{"service.iofog.org/tag: all"}})
	write := func(cfg string) {
		err := s.store.InTx(context.Background(), func(tx *store.Tx) error {
			return tx.WriteRouter(context.Background(), fog.UUID, store.RouterWrite{Base: []byte(cfg)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	listening := func(name string) func() (bool, string) {
		return func() (bool, string) {
			l, _ := s.bridges("fog-x")
			return l[name+"-listener"] != nil, fmt.Sprint(l)
		}
	}
	create := func(name string) {
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{"name": name, "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
		s.waitStatus(name, "ready")
	}
	// fog-x's queued work is done once it listens for web.
	create("web")
	s.waitFor("fog-x listening for web", 30*time.Second, listening("web"))

	write(`{"bridges":`)
	create("shop")
	s.waitFor("a failed agent batch in the visibility store", 30*time.Second, func() (bool, string) {
		ids := s.listIDs(`WorkflowType = "AgentBatchWorkflow" AND ExecutionStatus = "Failed"`)
		return len(ids) > 0, fmt.Sprint(ids)
	})
	time.Sleep(time.Second) // no write of fog-x is in flight

	write(`{}`)
	mended := time.Now()
	s.waitFor("fog-x listening for shop", 30*time.Second, listening("shop"))
	if took := time.Since(mended); took > 15*time.Second {
		t.Errorf("fog-x was written %s after its config was mended, want within 15 s", took)
	}
}
