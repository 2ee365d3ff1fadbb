package workflows

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"svcbridge/activities"
)

// These tests check the orchestration alone, with mocked activities; the
// activities and the whole path run for real in systemtest.

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(ServiceWorkflow, workflow.RegisterOptions{Name: ServiceWorkflowName})
	env.RegisterActivity(&activities.Activities{})
	return env
}

func TestServiceWorkflowEndsOnceTheServiceIsGone(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.PlanService, mock.Anything, "checkout").Return(activities.ServicePlan{Exists: false, Sites: []string{"hub"}}, nil).Once()
	env.OnActivity(a.ReconcileAgents, mock.Anything, []string{"hub"}).Return(nil).Once()
	env.ExecuteWorkflow(ServiceWorkflow, "checkout")
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v; want a clean end", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	env.AssertExpectations(t)
}

func TestServiceWorkflowRetriesAFailureThenRecordsReady(t *testing.T) {
	env := newEnv(t)
	plan := activities.ServicePlan{Exists: true, Generation: 1, Sites: []string{"fog", "hub"}, ConnectorSite: "fog", HubSite: "hub"}
	deleted := false
	env.OnActivity(a.PlanService, mock.Anything, "checkout").Return(func(_ context.Context, _ string) (activities.ServicePlan, error) {
		if deleted {
			return activities.ServicePlan{}, nil
		}
		return plan, nil
	})
	env.OnActivity(a.ReconcileAgents, mock.Anything, mock.Anything).Return(errors.New("database is down")).Times(3) // 3 local attempts
	env.OnActivity(a.ReconcileAgents, mock.Anything, mock.Anything).Return(nil)
	var finished []activities.Finish
	env.OnActivity(a.FinishService, mock.Anything, mock.Anything).Return(func(_ context.Context, f activities.Finish) error {
		finished = append(finished, f)
		return nil
	})
	// Once ready, the service is deleted: the workflow ends.
	env.RegisterDelayedCallback(func() {
		deleted = true
		env.SignalWorkflow(SignalReconcile, nil)
	}, time.Hour)
	env.ExecuteWorkflow(ServiceWorkflow, "checkout")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 2 || finished[0].Error == "" || finished[1].Error != "" {
		t.Fatalf("finishes %+v; want failed (with the reason) then ready", finished)
	}
	if want := "write router config: "; len(finished[0].Error) < len(want) || finished[0].Error[:len(want)] != want {
		t.Errorf("failure reason %q, want it to say what failed", finished[0].Error)
	}
}

func TestServiceWorkflowContinuesAsNewBeforeItsHistoryGrows(t *testing.T) {
	defer func(n int) { maxIterations = n }(maxIterations)
	maxIterations = 3
	env := newEnv(t)
	env.OnActivity(a.PlanService, mock.Anything, "checkout").Return(activities.ServicePlan{Exists: true, Generation: 1}, nil)
	env.OnActivity(a.ReconcileAgents, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.FinishService, mock.Anything, mock.Anything).Return(nil)
	for i := 1; i <= 5; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, nil) }, time.Duration(i)*time.Minute)
	}
	env.ExecuteWorkflow(ServiceWorkflow, "checkout")
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
}

func TestServiceWorkflowFansOutInChunks(t *testing.T) {
	env := newEnv(t)
	agents := make([]string, 12000)
	for i := range agents {
		agents[i] = time.Duration(i).String()
	}
	env.OnActivity(a.PlanService, mock.Anything, "checkout").Return(activities.ServicePlan{Exists: true, Generation: 1, Fanout: agents}, nil).Once()
	env.OnActivity(a.PlanService, mock.Anything, "checkout").Return(activities.ServicePlan{}, nil)
	env.OnActivity(a.ReconcileAgents, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.FinishService, mock.Anything, mock.Anything).Return(nil)
	var mu sync.Mutex // the chunks' activities run at once
	var sizes []int
	env.OnActivity(a.QueueAgents, mock.Anything, mock.Anything).Return(func(_ context.Context, uuids []string) error {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(uuids))
		return nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, nil) }, time.Minute)
	env.ExecuteWorkflow(ServiceWorkflow, "checkout")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != 12000 || slices.Max(sizes) > fanoutChunk {
		t.Errorf("chunks %v, want 12000 agents in 3 chunks of at most %d", sizes, fanoutChunk)
	}
}
