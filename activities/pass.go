package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"svcbridge/reconcile"
	"svcbridge/service"
)

// ReconcileService runs a whole reconcile pass of a service in one
// activity: the service workflow's fast path, as a local activity, and
// its passes after a failure, each a regular activity that the Web UI
// shows with its failure. As a local activity it leaves the queue step to
// the workflow (reconcile.Outcome.FanoutLeft).
func (a *Activities) ReconcileService(ctx context.Context, name string) (reconcile.Outcome, error) {
	if !activity.GetInfo(ctx).IsLocalActivity { // a local one's heartbeats go nowhere
		defer heartbeating(ctx)()
		return reconcile.Run(directSteps{ctx, a}, name)
	}
	steps := &leavingFanout{directSteps: directSteps{ctx, a}}
	out, err := reconcile.Run(steps, name)
	out.FanoutLeft = steps.left
	return out, reconcile.WithOutcome(out, err)
}

// leavingFanout runs a pass's steps as directSteps does, but for the queue
// step, which it leaves to the workflow.
type leavingFanout struct {
	directSteps
	left bool
}

func (l *leavingFanout) Queue(string, []string) error {
	l.left = true
	return nil
}

// ReconcileKube makes the hub ConfigMap and the Kubernetes Service match
// the service, heartbeating while it waits for a LoadBalancer's ingress.
func (a *Activities) ReconcileKube(ctx context.Context, name string) (reconcile.KubeResult, error) {
	defer heartbeating(ctx)()
	return a.reconcileKube(ctx, name)
}

func (a *Activities) reconcileKube(ctx context.Context, name string) (reconcile.KubeResult, error) {
	svc, err := a.kubeService(ctx, name)
	if err != nil {
		return reconcile.KubeResult{}, err
	}
	if _, err := a.writeHubPairs(ctx, service.PlanHubPairs(name, svc)); err != nil {
		return reconcile.KubeResult{}, err
	}
	return a.reconcileKubeService(ctx, name, svc)
}

// heartbeating records a heartbeat every third of reconcile.PassHeartbeat until the
// returned stop is called, so that a long step neither times out nor
// misses a cancellation.
func heartbeating(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(reconcile.PassHeartbeat / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// directSteps runs the steps of reconcile.Run as plain calls inside one
// activity.
type directSteps struct {
	ctx context.Context
	a   *Activities
}

func (d directSteps) Step(what string) { activity.RecordHeartbeat(d.ctx, what) }
func (d directSteps) Plan(name string) (reconcile.Plan, error) {
	return d.a.PlanService(d.ctx, name)
}
func (d directSteps) ReconcileAgents(name string, sites []string) error {
	return d.a.ReconcileAgents(d.ctx, name, sites)
}
func (d directSteps) Kube(name string) (*string, error) {
	kr, err := d.a.reconcileKube(d.ctx, name)
	return kr.Endpoint, err
}
func (d directSteps) Finish(f reconcile.Finish) (string, error) { return d.a.FinishService(d.ctx, f) }

// Queue starts over on a retry: the pass's heartbeats are its steps'. Its
// plan, PlanService's, never lists the agents.
func (d directSteps) Queue(name string, _ []string) error {
	return d.a.queueFanout(d.ctx, name, "", func(string) {})
}
