package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// TestAgentQueueStartsOnlyTheBatchesItNeeds: the Web UI's workflow list
// shows an AgentBatchWorkflow only where agents were queued. An idle
// installation starts none, a change that queues one agent starts one,
// and a wake with nothing queued (the resync's, after any quiet spell)
// starts none and leaves no timer that would.
func TestAgentQueueStartsOnlyTheBatchesItNeeds(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		if n := s.batchRuns(); n != 0 {
			t.Fatalf("%d batch runs in an idle installation, want none", n)
		}

		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		s.waitQueueSettled(1)

		s.must(http.StatusOK, "PATCH", "/api/v3/agents/hub", map[string]any{"tags": []string{"zone: a"}}, nil)
		s.waitQueueSettled(2)

		if err := s.wf.WakeAgentQueue(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.waitQueueSettled(2)
	})
}

// waitQueueSettled waits until the agent queue's workflow has handled its
// last signal and waits with no batch running, then checks that it started
// batches batch runs in all, in its history and in the visibility store
// (the Web UI's list), and that it waits for a signal only: an idle
// minute would start nothing.
func (s *system) waitQueueSettled(batches int) {
	s.t.Helper()
	id := s.wf.AgentQueue()
	var h queueHistory
	s.waitFor("the agent queue to settle", 30*time.Second, func() (bool, string) {
		d, err := s.temporal.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err.Error()
		}
		h = s.queueHistory(id)
		settled := h.handledLastSignal && d.GetPendingWorkflowTask() == nil && len(d.GetPendingChildren()) == 0
		return settled, fmt.Sprintf("%+v, pending task %v, children %d", h, d.GetPendingWorkflowTask(), len(d.GetPendingChildren()))
	})
	if h.children != batches {
		s.t.Errorf("the queue started %d batch runs, want %d", h.children, batches)
	}
	if h.timers != 0 {
		s.t.Errorf("the queue waits on %d timers, want a signal only", h.timers)
	}
	s.waitFor(fmt.Sprintf("%d batch runs listed", batches), 30*time.Second, func() (bool, string) {
		n := s.batchRuns()
		return n == batches, fmt.Sprint(n)
	})
}

// batchRuns counts the AgentBatchWorkflow runs Temporal's visibility lists.
func (s *system) batchRuns() int {
	s.t.Helper()
	resp, err := s.temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Query: `WorkflowType = "AgentBatchWorkflow"`})
	if err != nil {
		s.t.Fatal(err)
	}
	return int(resp.GetCount())
}

// queueHistory is what the queue workflow's history shows.
type queueHistory struct {
	children          int  // child workflows started
	timers            int  // timers started and not fired or cancelled
	handledLastSignal bool // a workflow task completed after the last signal
}

func (s *system) queueHistory(id string) queueHistory {
	s.t.Helper()
	var h queueHistory
	iter := s.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			h.children++
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			h.timers++
		case enumspb.EVENT_TYPE_TIMER_FIRED, enumspb.EVENT_TYPE_TIMER_CANCELED:
			h.timers--
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			h.handledLastSignal = false
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			h.handledLastSignal = true
		}
	}
	return h
}
