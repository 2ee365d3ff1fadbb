package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
)

// ReconcileService runs a whole reconcile pass of a service in one
// activity: the service workflow's fast path, as a local activity, and
// its passes after a failure, each a regular activity that the Web UI
// shows with its failure. As a local activity it leaves the queue step to
// the workflow (reconcile.Outcome.FanoutLeft), and first tries the pass
// in one transaction (passInOneTx).
func (a *Activities) ReconcileService(ctx context.Context, name string) (reconcile.Outcome, error) {
	if !activity.GetInfo(ctx).IsLocalActivity { // a local one's heartbeats go nowhere
		defer heartbeating(ctx)()
		return reconcile.Run(directSteps{ctx, a}, name)
	}
	if !a.ControlPlane.Kubernetes() {
		if out, ok := a.passInOneTx(ctx, name); ok {
			return out, nil
		}
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

// passInOneTx runs a pass that needs no step of its own (no Kubernetes,
// the queue left to the workflow) in one transaction: the plan, the
// routers and the outcome in one commit, where the steps take three. It
// commits only a pass that found nothing wrong (ok); any failure rolls it
// back, and the caller runs the pass step by step, each step committing
// what it did and the failure recorded on its own. Passes of other
// services that come meanwhile share the transaction (store.InBatch): a
// burst of creates commits a batch at a time, moving the hub's version
// once for each, where each pass waited for the one before it to commit.
func (a *Activities) passInOneTx(ctx context.Context, name string) (out reconcile.Outcome, ok bool) {
	var steps *oneTx
	err := a.Store.InBatch(ctx, func(tx *store.Tx) (err error) {
		steps = &oneTx{ctx: ctx, a: a, tx: tx} // from scratch on a retried transaction
		out, err = reconcile.Run(steps, name)
		return err
	})
	if err != nil {
		return reconcile.Outcome{}, false
	}
	for _, report := range steps.committed {
		report()
	}
	out.FanoutLeft = steps.left
	return out, true
}

// oneTx runs a pass's steps in one transaction (passInOneTx).
type oneTx struct {
	ctx context.Context
	a   *Activities
	tx  *store.Tx
	// committed report what the steps did, once it is committed.
	committed []func()
	left      bool
}

// errOwnSteps: a Kubernetes pass waits on the API server, and runs its
// steps each in its own transaction.
var errOwnSteps = errors.New("a Kubernetes pass runs step by step")

func (o *oneTx) Step(string) {}
func (o *oneTx) Plan(name string) (reconcile.Plan, error) {
	plan, moved, err := o.a.plan(o.ctx, o.tx, name)
	if err == nil && moved != nil {
		err = o.tx.SetServicePlacement(o.ctx, name, plan.Generation, *moved)
	}
	o.committed = append(o.committed, func() { observePlan(plan) })
	return plan, err
}
func (o *oneTx) ReconcileAgents(name string, sites []string) error {
	for _, u := range sites {
		if _, err := o.a.routerPass(o.ctx, o.tx, u, name, false); err != nil {
			return err
		}
	}
	return nil
}
func (o *oneTx) Kube(string) (*string, error) { return nil, errOwnSteps }
func (o *oneTx) Finish(f reconcile.Finish) (string, error) {
	rec, err := finish(o.ctx, o.tx, f)
	o.committed = append(o.committed, func() { rec.report(o.ctx, f) })
	return rec.reason, err
}
func (o *oneTx) Queue(string, []string) error {
	o.left = true
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
