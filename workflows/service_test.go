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
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"svcbridge/reconcile"
)

// These tests check the orchestration alone, with mocked activities; the
// activities and the whole path run for real in systemtest.

// beforeOneLocalPass makes env's runs take the branch of runs begun before
// reconcile.ChangeOneLocalPass: each step of a pass its own activity.
func beforeOneLocalPass(env *testsuite.TestWorkflowEnvironment) {
	c := reconcile.ChangeOneLocalPass
	env.OnGetVersion(c.ID, workflow.DefaultVersion, workflow.Version(c.Version)).Return(workflow.DefaultVersion)
}

func newEnv(t *testing.T, timing Timing) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	Register(env, timing)
	registerStubs(env)
	return env
}

func TestServiceWorkflowEndsOnceTheServiceIsGone(t *testing.T) {
	env := newEnv(t, Timing{})
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(reconcile.Outcome{Planned: true, Gone: true}, nil).Once()
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v; want a clean end", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	env.AssertExpectations(t)
}

func TestServiceWorkflowRetriesAFailureThenRecordsReady(t *testing.T) {
	env := newEnv(t, Timing{})
	deleted := false
	// The fast path's three local attempts fail, then the pass retried as
	// an activity fails once more, then succeeds.
	exists := reconcile.Outcome{Planned: true, Exists: true}
	failure := temporal.NewApplicationError("write router config: database is down", reconcile.TypeRouterWriteFailed, exists)
	passes := 0
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(func(context.Context, string) (reconcile.Outcome, error) {
		passes++
		switch {
		case deleted:
			return reconcile.Outcome{Planned: true, Gone: true}, nil
		case passes <= 4:
			return reconcile.Outcome{}, failure
		}
		return exists, nil
	})
	var statuses []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		v, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(StatusKey)
		statuses = append(statuses, v)
	}).Return(nil)
	var state ServiceState
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		if err == nil {
			err = v.Get(&state)
		}
		if err != nil {
			t.Error(err)
		}
		// Once ready, the service is deleted: the workflow ends.
		deleted = true
		env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge)
	}, time.Hour)
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if passes != 6 {
		t.Errorf("%d passes, want 3 local attempts, 2 retries and the delete's", passes)
	}
	if !slices.Equal(statuses, []string{"failed", "ready", "deleting"}) {
		t.Errorf("ProvisioningStatus went %v, want failed, ready, deleting", statuses)
	}
	if state.Step != "ready; waiting for changes" || state.LastError != "" {
		t.Errorf("state %+v, want ready", state)
	}
	env.AssertExpectations(t)
}

func TestProvisioningStatus(t *testing.T) {
	failure := errors.New("x")
	for _, c := range []struct {
		out  reconcile.Outcome
		err  error
		want string
	}{
		{reconcile.Outcome{}, failure, "pending"}, // could not read the service: unchanged
		{reconcile.Outcome{Planned: true, Exists: true}, nil, "ready"},
		{reconcile.Outcome{Planned: true, Exists: true}, failure, "failed"},
		{reconcile.Outcome{Planned: true}, failure, "deleting"},
		{reconcile.Outcome{Planned: true, Gone: true}, nil, "deleting"},
	} {
		if got := provisioningStatus("pending", c.out, c.err); got != c.want {
			t.Errorf("provisioningStatus(%+v, %v) = %q, want %q", c.out, c.err, got, c.want)
		}
	}
}

func TestBatchSummary(t *testing.T) {
	for _, c := range []struct {
		b    reconcile.AgentBatch
		want string
	}{
		{reconcile.AgentBatch{}, "no agents were queued"},
		{reconcile.AgentBatch{Claimed: 2, Names: []string{"a", "b"}, Services: 1}, "2 agents (a, b), 1 services"},
		{reconcile.AgentBatch{Claimed: 250, Names: []string{"a", "b", "c"}, Services: 40}, "250 agents (a, b, c and 247 more), 40 services"},
	} {
		if got := batchSummary(c.b); got != c.want {
			t.Errorf("batchSummary(%+v) = %q, want %q", c.b, got, c.want)
		}
	}
}

func TestAgentBatchFailsWhenAnAgentWriteFailed(t *testing.T) {
	env := newEnv(t, Timing{})
	env.OnActivity(reconcile.ActivityDrainAgents, mock.Anything, 250).Return(reconcile.AgentBatch{Claimed: 2, Names: []string{"a"},
		Failed: []string{"b: database is down"}}, nil)
	env.ExecuteWorkflow(AgentBatchWorkflowName, reconcile.AgentBatchInput{Limit: 250})
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Message() != "1 of 2 agent router writes failed, retried in a few seconds: b: database is down" {
		t.Fatalf("error %v, want the failed agent named", err)
	}
}

func TestServiceWorkflowContinuesAsNewBeforeItsHistoryGrows(t *testing.T) {
	env := newEnv(t, Timing{MaxIterations: 3})
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(reconcile.Outcome{Planned: true, Exists: true}, nil)
	for i := 1; i <= 5; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge) }, time.Duration(i)*time.Minute)
	}
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
}

// A pass that left its fan-out to the workflow has it queued in one
// regular activity, by the service's name, which Temporal retries.
func TestServiceWorkflowQueuesTheFanOutAPassLeft(t *testing.T) {
	env := newEnv(t, Timing{})
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(reconcile.Outcome{Planned: true, Exists: true, FanoutLeft: true}, nil).Once()
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(reconcile.Outcome{Planned: true, Gone: true}, nil).Once()
	env.OnActivity(reconcile.ActivityQueueFanout, mock.Anything, "checkout").Return(errors.New("database is down")).Once()
	env.OnActivity(reconcile.ActivityQueueFanout, mock.Anything, "checkout").Return(nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge) }, time.Hour)
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

// In a run begun before the pass was one local activity, a plan with a
// count has the store queue the fan-out in one activity.
func TestServiceWorkflowQueuesItsFanOutByName(t *testing.T) {
	env := newEnv(t, Timing{})
	beforeOneLocalPass(env)
	env.OnActivity(reconcile.ActivityPlanService, mock.Anything, "checkout").Return(reconcile.Plan{Exists: true, Generation: 1, FanoutCount: 12000}, nil).Once()
	env.OnActivity(reconcile.ActivityPlanService, mock.Anything, "checkout").Return(reconcile.Plan{}, nil)
	env.OnActivity(reconcile.ActivityReconcileAgents, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(reconcile.ActivityFinishService, mock.Anything, mock.Anything).Return("", nil)
	env.OnActivity(reconcile.ActivityQueueFanout, mock.Anything, "checkout").Return(nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge) }, time.Minute)
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

// A plan recorded by an older release lists its agents; its history
// replays them in chunks.
func TestServiceWorkflowFansOutARecordedListInChunks(t *testing.T) {
	env := newEnv(t, Timing{})
	beforeOneLocalPass(env)
	agents := make([]string, 12000)
	for i := range agents {
		agents[i] = time.Duration(i).String()
	}
	env.OnActivity(reconcile.ActivityPlanService, mock.Anything, "checkout").Return(reconcile.Plan{Exists: true, Generation: 1, Fanout: agents}, nil).Once()
	env.OnActivity(reconcile.ActivityPlanService, mock.Anything, "checkout").Return(reconcile.Plan{}, nil)
	env.OnActivity(reconcile.ActivityReconcileAgents, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(reconcile.ActivityFinishService, mock.Anything, mock.Anything).Return("", nil)
	var mu sync.Mutex // the chunks' activities run at once
	var sizes []int
	env.OnActivity(reconcile.ActivityQueueAgents, mock.Anything, mock.Anything).Return(func(_ context.Context, uuids []string) error {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(uuids))
		return nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge) }, time.Minute)
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != 12000 || slices.Max(sizes) > fanoutChunk {
		t.Errorf("chunks %v, want 12000 agents in 3 chunks of at most %d", sizes, fanoutChunk)
	}
}

// A failing service's passes are activities of one attempt, retried by the
// workflow's backoff: a reconcile signal cuts the wait short and does not
// start the count over, and one sent outside svcbridge (the Web UI) is
// recorded as a reconcile request.
func TestServiceWorkflowKeepsItsFailureStreakAcrossSignals(t *testing.T) {
	env := newEnv(t, Timing{})
	fixed := false
	failure := temporal.NewApplicationError("agent fog-a has routerMode none", reconcile.TypeInvalidPlacement)
	env.OnActivity(reconcile.ActivityReconcileService, mock.Anything, "checkout").Return(func(context.Context, string) (reconcile.Outcome, error) {
		if fixed {
			return reconcile.Outcome{Planned: true, Exists: true}, nil
		}
		return reconcile.Outcome{Planned: true, Exists: true}, failure
	})
	var recorded []int
	env.OnActivity(reconcile.ActivityRecordSignalledReconcile, mock.Anything, "checkout", mock.Anything).Return(func(_ context.Context, _ string, n int) error {
		recorded = append(recorded, n)
		return nil
	})
	query := func() ServiceState {
		var s ServiceState
		v, err := env.QueryWorkflow(QueryState)
		if err == nil {
			err = v.Get(&s)
		}
		if err != nil {
			t.Error(err)
		}
		return s
	}
	var before, after, ready ServiceState
	env.RegisterDelayedCallback(func() {
		before = query()
		env.SignalWorkflow(SignalReconcile, nil) // as the Web UI sends it
	}, 10*time.Minute)
	env.RegisterDelayedCallback(func() {
		after = query()
		fixed = true
		env.SignalWorkflow(SignalReconcile, SignalFromSvcbridge)
	}, 10*time.Minute+time.Second)
	env.RegisterDelayedCallback(func() { ready = query() }, 11*time.Minute)
	env.RegisterDelayedCallback(func() { env.CancelWorkflow() }, time.Hour)
	start := env.Now()
	env.ExecuteWorkflow(ServiceWorkflowName, reconcile.ServiceInput{Name: "checkout"})

	// Waits of 0, 2, 4, ... 256 s: 10 passes in the first 10 minutes.
	if before.Failing.Attempts != 10 || !before.Failing.Since.Equal(start) || before.LastError != "agent fog-a has routerMode none" {
		t.Errorf("after 10 minutes the state is %+v, want 10 failed attempts since %s", before, start)
	}
	if after.Failing.Attempts != 11 || !after.Failing.Since.Equal(start) {
		t.Errorf("after a signal the state is %+v, want the 11th failed attempt since %s", after, start)
	}
	if !slices.Equal(recorded, []int{1}) {
		t.Errorf("recorded the Web UI's signals %v times, want once", recorded)
	}
	if ready.Failing != (reconcile.FailureStreak{}) || ready.Step != "ready; waiting for changes" {
		t.Errorf("once ready the state is %+v, want no failure streak", ready)
	}
}

func TestFromSvcbridge(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	payload := func(v any) *commonpb.Payload {
		p, err := dc.ToPayload(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		p    *commonpb.Payload
		want bool
	}{
		{payload(SignalFromSvcbridge), true},
		{nil, false},          // the Web UI, without input
		{payload(nil), false}, // older svcbridge releases, and the Web UI
		{payload("please"), false},
		{payload(map[string]int{"x": 1}), false},
		{&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: []byte("svcbridge")}, false},
	} {
		if got := fromSvcbridge(c.p); got != c.want {
			t.Errorf("fromSvcbridge(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}
