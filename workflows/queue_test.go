package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"svcbridge/reconcile"
)

func TestBatchesFor(t *testing.T) {
	for _, c := range []struct{ claimable, want int }{
		{0, 0}, {1, 1}, {drainBatch, 1}, {drainBatch + 1, 2}, {drainWindow * drainBatch, drainWindow}, {10000, drainWindow},
	} {
		if got := batchesFor(c.claimable); got != c.want {
			t.Errorf("batchesFor(%d) = %d, want %d", c.claimable, got, c.want)
		}
	}
}

func TestLeaseWait(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		next time.Time
		want time.Duration
	}{
		{time.Time{}, 0}, // no lease held: only a signal wakes the queue
		{now.Add(5 * time.Second), 5*time.Second + leaseSlack},
		{now.Add(-time.Second), leaseSlack}, // ended by a clock ahead of the server's
	} {
		if got := leaseWait(now, c.next); got != c.want {
			t.Errorf("leaseWait(now, %v) = %v, want %v", c.next, got, c.want)
		}
	}
}

// TestAgentQueueStartsTheBatchesTheQueueNeeds: the queue starts one batch
// child per drainBatch claimable agents, waits for the lease of a failed
// batch's agents to end and starts one for them, then waits for a signal
// only; a signal with nothing claimable starts none.
func TestAgentQueueStartsTheBatchesTheQueueNeeds(t *testing.T) {
	env := newEnv(t, Timing{MaxIterations: 3})
	start := env.Now()
	retryAt := start.Add(5 * time.Second)
	outlooks := []reconcile.QueueOutlook{
		{Claimable: drainBatch + 1}, // a window of 2
		{NextLease: retryAt},        // one agent failed: its lease ends soon
		{Claimable: 1},              // a window of 1
		{},                          // idle: a signal...
		{},                          // ...starts nothing
	}
	var asked []time.Time
	env.OnActivity(reconcile.ActivityAgentQueueOutlook, mock.Anything, drainWindow*drainBatch).Return(func(context.Context, int) (reconcile.QueueOutlook, error) {
		asked = append(asked, env.Now())
		if len(outlooks) == 0 {
			t.Error("asked more often than expected")
			return reconcile.QueueOutlook{}, errors.New("unexpected")
		}
		q := outlooks[0]
		outlooks = outlooks[1:]
		return q, nil
	})
	var mu sync.Mutex // a window's children run at once
	var claims []int
	claimed := []reconcile.AgentBatch{{Claimed: drainBatch}, {Claimed: 1, Failed: []string{"a: down"}}, {Claimed: 1}}
	env.OnActivity(reconcile.ActivityDrainAgents, mock.Anything, drainBatch).Return(func(context.Context, int) (reconcile.AgentBatch, error) {
		mu.Lock()
		defer mu.Unlock()
		claims = append(claims, len(claims))
		return claimed[len(claims)-1], nil
	})
	for i := 1; i <= 2; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, nil) }, time.Duration(i)*time.Hour)
	}
	env.ExecuteWorkflow(AgentQueueWorkflowName, reconcile.AgentQueueInput{})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new once the rounds are done", err)
	}
	if len(claims) != 3 {
		t.Errorf("%d batch children, want 2 for %d agents and 1 for the failed one", len(claims), drainBatch+1)
	}
	if len(outlooks) != 0 {
		t.Errorf("the queue asked %d times, want 5", len(asked))
	} else if asked[2].Before(retryAt) {
		t.Errorf("asked again at %v, before the lease ended at %v", asked[2], retryAt)
	}
}
