package reconcile

import (
	"errors"
	"slices"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// fakeSteps records the steps a pass takes and fails those named in fail.
type fakeSteps struct {
	plan     Plan
	endpoint *string
	missing  string
	fail     map[string]error
	took     []string
	finished []Finish
}

func (f *fakeSteps) Step(string) {}
func (f *fakeSteps) Plan(string) (Plan, error) {
	f.took = append(f.took, "plan")
	return f.plan, f.fail["plan"]
}
func (f *fakeSteps) ReconcileAgents(string, []string) error {
	f.took = append(f.took, "agents")
	return f.fail["agents"]
}
func (f *fakeSteps) Kube(string) (*string, error) {
	f.took = append(f.took, "kube")
	return f.endpoint, f.fail["kube"]
}
func (f *fakeSteps) Finish(fin Finish) (string, error) {
	f.took = append(f.took, "finish")
	f.finished = append(f.finished, fin)
	return f.missing, f.fail["finish"]
}
func (f *fakeSteps) Queue(_ string, recorded []string) error {
	if recorded != nil {
		f.took = append(f.took, "queue recorded")
		return f.fail["queue"]
	}
	f.took = append(f.took, "queue")
	return f.fail["queue"]
}

func TestRun(t *testing.T) {
	down := errors.New("database is down")
	lb := "203.0.113.7"
	exists := Plan{Exists: true, Generation: 3, Sites: []string{"hub"}, HubSite: "hub"}
	kubernetes := exists
	kubernetes.Kubernetes = true
	fanout := exists
	fanout.FanoutCount = 1
	recorded := exists
	recorded.Fanout = []string{"fog-a"}
	invalid := fanout
	invalid.Invalid = "agent fog-a has routerMode none"
	invalid.Kubernetes = true
	for _, tc := range []struct {
		name     string
		steps    fakeSteps
		took     []string
		out      Outcome
		errType  string
		errMsg   string
		recorded string // the last Finish's Error
		fanout   bool   // the last Finish's Fanout: a queue step follows it
	}{
		{name: "ready", steps: fakeSteps{plan: exists},
			took: []string{"plan", "agents", "finish"}, out: Outcome{Planned: true, Exists: true}},
		{name: "deleted and gone", steps: fakeSteps{plan: Plan{Sites: []string{"hub"}, FanoutCount: 1}},
			took: []string{"plan", "agents", "queue"}, out: Outcome{Planned: true, Gone: true}},
		{name: "Kubernetes branch", steps: fakeSteps{plan: kubernetes, endpoint: &lb},
			took: []string{"plan", "agents", "kube", "finish"}, out: Outcome{Planned: true, Exists: true}},
		{name: "fanout", steps: fakeSteps{plan: fanout},
			took: []string{"plan", "agents", "finish", "queue"}, out: Outcome{Planned: true, Exists: true}, fanout: true},
		{name: "fanout a plan of an older release listed", steps: fakeSteps{plan: recorded},
			took: []string{"plan", "agents", "finish", "queue recorded"}, out: Outcome{Planned: true, Exists: true}},
		{name: "plan fails", steps: fakeSteps{fail: map[string]error{"plan": down}},
			took: []string{"plan"}, errType: TypePlanFailed, errMsg: "plan: database is down"},
		{name: "router write fails, recorded", steps: fakeSteps{plan: fanout, fail: map[string]error{"agents": down}},
			took: []string{"plan", "agents", "finish"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeRouterWriteFailed, errMsg: "write router config: database is down", recorded: "write router config: database is down"},
		{name: "Kubernetes fails with its own type", steps: fakeSteps{plan: kubernetes,
			fail: map[string]error{"kube": temporal.NewNonRetryableApplicationError("no ingress yet", TypeNoIngress, nil)}},
			took: []string{"plan", "agents", "kube", "finish"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeNoIngress, errMsg: "Kubernetes: no ingress yet", recorded: "Kubernetes: no ingress yet"},
		{name: "recording the failure fails too", steps: fakeSteps{plan: exists, fail: map[string]error{"agents": down, "finish": errors.New("disk full")}},
			took: []string{"plan", "agents", "finish"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeRouterWriteFailed, errMsg: "write router config: database is down; recording it failed: disk full",
			recorded: "write router config: database is down"},
		{name: "status write fails", steps: fakeSteps{plan: fanout, fail: map[string]error{"finish": down}},
			took: []string{"plan", "agents", "finish"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeStatusWriteFailed, errMsg: "record status: database is down", fanout: true},
		{name: "objects missing", steps: fakeSteps{plan: exists, missing: "no listener on hub"},
			took: []string{"plan", "agents", "finish"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeObjectsNotInPlace, errMsg: "no listener on hub"},
		{name: "invalid placement: no Kubernetes, recorded, queued", steps: fakeSteps{plan: invalid},
			took: []string{"plan", "agents", "finish", "queue"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeInvalidPlacement, errMsg: invalid.Invalid, recorded: invalid.Invalid, fanout: true},
		{name: "queue fails", steps: fakeSteps{plan: fanout, fail: map[string]error{"queue": down}},
			took: []string{"plan", "agents", "finish", "queue"}, out: Outcome{Planned: true, Exists: true},
			errType: TypeFanoutFailed, errMsg: "queue agents: database is down", fanout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(&tc.steps, "checkout")
			if !slices.Equal(tc.steps.took, tc.took) {
				t.Errorf("steps %v, want %v", tc.steps.took, tc.took)
			}
			if out != tc.out {
				t.Errorf("outcome %+v, want %+v", out, tc.out)
			}
			var app *temporal.ApplicationError
			switch {
			case tc.errType == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.errType != "" && (!errors.As(err, &app) || app.Type() != tc.errType || app.Message() != tc.errMsg || app.NonRetryable()):
				t.Errorf("error %v, want a retryable %s %q", err, tc.errType, tc.errMsg)
			}
			// A workflow that ran the pass as one activity reads the
			// outcome from the failure.
			if err != nil && OutcomeOf(err) != tc.out {
				t.Errorf("the failure carries outcome %+v, want %+v", OutcomeOf(err), tc.out)
			}
			if n := len(tc.steps.finished); n > 0 && tc.steps.finished[n-1].Error != tc.recorded {
				t.Errorf("recorded %q, want %q", tc.steps.finished[n-1].Error, tc.recorded)
			}
			if n := len(tc.steps.finished); n > 0 && tc.steps.finished[n-1].Fanout != tc.fanout {
				t.Errorf("recorded with Fanout %v, want %v", tc.steps.finished[n-1].Fanout, tc.fanout)
			}
		})
	}
}

// The Kubernetes step's endpoint is what the pass records.
func TestRunRecordsTheIngress(t *testing.T) {
	lb := "203.0.113.7"
	s := fakeSteps{plan: Plan{Exists: true, Kubernetes: true}, endpoint: &lb}
	if _, err := Run(&s, "checkout"); err != nil {
		t.Fatal(err)
	}
	if e := s.finished[0].Endpoint; e == nil || *e != lb {
		t.Errorf("recorded endpoint %v, want %s", e, lb)
	}
}
