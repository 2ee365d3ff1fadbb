package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Error types of a failed reconcile pass, as the Web UI shows them. All are
// retryable: the service workflow retries every failure until the service
// is ready or gone, and says so.
const (
	TypePlanFailed        = "PlanFailed"
	TypeRouterWriteFailed = "RouterWriteFailed"
	TypeKubernetesFailed  = "KubernetesFailed"
	TypeObjectsNotInPlace = "ObjectsNotInPlace"
	TypeStatusWriteFailed = "StatusWriteFailed"
	TypeFanoutFailed      = "FanoutFailed"
)

// Steps are the parts of one reconcile pass. The service workflow runs them
// as (mostly local) activities on its fast path; the ReconcileService
// activity, which Temporal retries after a failure, calls them directly.
// RunPass holds their order, once for both.
type Steps interface {
	Step(what string) // reports progress
	Plan(name string) (ServicePlan, error)
	ReconcileAgents(name string, sites []string) error
	Kube(name string) (KubeResult, error)
	// Finish records the outcome and returns the failure it recorded for
	// a pass that found nothing wrong but objects missing.
	Finish(f Finish) (string, error)
	Queue(agents []string) error
}

// Outcome is what a reconcile pass found.
type Outcome struct {
	// Planned reports that the pass read the service; the rest is known.
	Planned bool
	// Exists reports that the service's row exists (false: deleted).
	Exists bool
	// Gone reports that the service is deleted and its objects removed.
	Gone bool
}

// RunPass runs one reconcile pass of the named service. A failure is
// recorded on the service (provisioningError) and returned as a retryable
// error with exactly that message and a type naming what failed.
func RunPass(s Steps, name string) (Outcome, error) {
	s.Step("planning")
	plan, err := s.Plan(name)
	if err != nil {
		return Outcome{}, passError(TypePlanFailed, "plan: "+Reason(err), err)
	}
	out := Outcome{Planned: true, Exists: plan.Exists}
	finish := Finish{Service: name, Generation: plan.Generation, ReconcileRequest: plan.ReconcileRequest,
		ConnectorSite: plan.ConnectorSite, HubSite: plan.HubSite, Endpoint: plan.Endpoint, Error: plan.Invalid, Since: plan.RequestedAt}
	// fail records the first failure of this pass on the service.
	fail := func(typ, step string, err error) (Outcome, error) {
		if finish.Error == "" {
			finish.Error = step + ": " + Reason(err)
		}
		if plan.Exists {
			_, _ = s.Finish(finish)
		}
		return out, passError(typ, finish.Error, err)
	}

	s.Step("writing router configs")
	if err := s.ReconcileAgents(name, plan.Sites); err != nil {
		return fail(TypeRouterWriteFailed, "write router config", err)
	}
	if plan.Kubernetes && plan.Invalid == "" {
		s.Step("reconciling the hub ConfigMap and the Kubernetes Service")
		kr, err := s.Kube(name)
		if err != nil {
			return fail(TypeKubernetesFailed, "Kubernetes", err)
		}
		finish.Endpoint = kr.Endpoint
	}
	if plan.Exists {
		s.Step("recording status")
		missing, err := s.Finish(finish)
		if err != nil {
			return out, passError(TypeStatusWriteFailed, "record status: "+Reason(err), err)
		}
		if missing != "" && plan.Invalid == "" {
			return out, temporal.NewApplicationError(missing, TypeObjectsNotInPlace)
		}
	}
	if len(plan.Fanout) > 0 {
		s.Step("queueing agents")
		if err := s.Queue(plan.Fanout); err != nil {
			return out, passError(TypeFanoutFailed, "queue agents: "+Reason(err), err)
		}
	}
	if plan.Invalid != "" {
		return out, temporal.NewApplicationError(plan.Invalid, TypeInvalidPlacement)
	}
	out.Gone = !plan.Exists
	return out, nil
}

// passError is a retryable failure whose message is msg alone, so that the
// Web UI shows what provisioningError says and no "retryable: false" of a
// cause. A cause's own readable type (InvalidPlacement, NoIngress) wins
// over the step's.
func passError(stepType, msg string, cause error) error {
	var app *temporal.ApplicationError
	if errors.As(cause, &app) && (app.Type() == TypeInvalidPlacement || app.Type() == TypeNoIngress) {
		stepType = app.Type()
	}
	return temporal.NewApplicationError(msg, stepType)
}

// Reason is the message of a failure without Temporal's wrapping, as the
// user should read it in provisioningError.
func Reason(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var act *temporal.ActivityError
	if errors.As(err, &act) && act.Unwrap() != nil {
		return act.Unwrap().Error()
	}
	return err.Error()
}

// PassHeartbeat is the heartbeat timeout of the activities that run a
// Kubernetes step: they heartbeat every third of it while they work.
const PassHeartbeat = 30 * time.Second

// ReconcileService runs a whole reconcile pass of a service in one
// activity. The service workflow runs it after its fast path failed, with
// a retry policy: the Web UI then shows the pending activity, its attempts
// and its last failure.
func (a *Activities) ReconcileService(ctx context.Context, name string) (Outcome, error) {
	defer heartbeating(ctx)()
	return RunPass(directSteps{ctx, a}, name)
}

// ReconcileKube makes the hub ConfigMap and the Kubernetes Service match
// the service, heartbeating while it waits for a LoadBalancer's ingress.
func (a *Activities) ReconcileKube(ctx context.Context, name string) (KubeResult, error) {
	defer heartbeating(ctx)()
	return a.reconcileKube(ctx, name)
}

func (a *Activities) reconcileKube(ctx context.Context, name string) (KubeResult, error) {
	if _, err := a.ReconcileHubConfigMap(ctx, name); err != nil {
		return KubeResult{}, err
	}
	return a.ReconcileKubeService(ctx, name)
}

// heartbeating records a heartbeat every third of PassHeartbeat until the
// returned stop is called, so that a long step neither times out nor
// misses a cancellation.
func heartbeating(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(PassHeartbeat / 3)
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

// directSteps runs the steps as plain calls inside one activity.
type directSteps struct {
	ctx context.Context
	a   *Activities
}

func (d directSteps) Step(what string) { activity.RecordHeartbeat(d.ctx, what) }
func (d directSteps) Plan(name string) (ServicePlan, error) {
	return d.a.PlanService(d.ctx, name)
}
func (d directSteps) ReconcileAgents(name string, sites []string) error {
	return d.a.ReconcileAgents(d.ctx, name, sites)
}
func (d directSteps) Kube(name string) (KubeResult, error) {
	return d.a.reconcileKube(d.ctx, name)
}
func (d directSteps) Finish(f Finish) (string, error) { return d.a.FinishService(d.ctx, f) }

// Queue starts over on a retry: the pass's heartbeats are its steps', and
// its retry may queue other agents.
func (d directSteps) Queue(agents []string) error {
	return d.a.queueAgents(d.ctx, agents, func(int) {})
}
