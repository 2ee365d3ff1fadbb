package reconcile

// The order of one reconcile pass of a service: plan, write the site
// routers, Kubernetes, record the outcome, queue the other agents. The
// ReconcileService activity runs it, as the service workflow's fast path
// (a local activity: one command in the history) and as its retries. Runs
// of the workflow begun before ChangeOneLocalPass run it in the workflow,
// each step a command of its own: a change of the order or number of
// steps changes their commands, and must go behind a Change (versions.go).

import (
	"errors"
	"time"

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
	// TypeInvalidPlacement is the type of failures only an inventory
	// change fixes, and TypeNoIngress of a LoadBalancer without ingress
	// yet: steps do not retry them quickly, and a pass failing with them
	// keeps their type rather than the step's.
	TypeInvalidPlacement = "InvalidPlacement"
	TypeNoIngress        = "NoIngress"
)

// What a pass's outcome is logged and worded with, shared by the steps
// that say it and the worker's SDK logger that reads it (worker.SDKLogger):
// the recording step logs LogPassFailed or LogServiceReady with the keys
// "service" and, of a failure, "reason"; a failure the pass could not
// record on the service carries RecordingFailed.
const (
	LogPassFailed   = "service reconcile failed"
	LogServiceReady = "service ready"
	RecordingFailed = "; recording it failed: "
)

// Steps are the parts of one reconcile pass. The ReconcileService activity
// calls them directly; runs of the service workflow begun before
// ChangeOneLocalPass run them as (mostly local) activities.
type Steps interface {
	Step(what string) // reports progress
	Plan(name string) (Plan, error)
	ReconcileAgents(name string, sites []string) error
	// Kube makes the hub ConfigMap and the Kubernetes Service match the
	// service and returns the LoadBalancer's ingress (nil when it has
	// none).
	Kube(name string) (endpoint *string, err error)
	// Finish records the outcome and returns the failure it recorded for
	// a pass that found nothing wrong but objects missing.
	Finish(f Finish) (missing string, err error)
	// Queue queues the other agents whose listeners may change. recorded
	// is the list a plan of an older release carried (Plan.Fanout); nil
	// asks the store to queue them.
	Queue(name string, recorded []string) error
}

// Plan is what the plan step (the PlanService activity) found: where a
// service's objects go and which agents to reconcile.
type Plan struct {
	Exists     bool
	Generation int64
	// ReconcileRequest is the service's reconcile request count when the
	// pass began.
	ReconcileRequest int64
	// RequestedAt is when the create, update or reconcile request this
	// pass answers was made; zero when it answers none.
	RequestedAt time.Time
	// Sites are the agents that hold (or held) the service's connector and
	// hub listener; the service workflow reconciles them itself.
	Sites []string
	// ConnectorSite and HubSite are where ready requires the objects.
	ConnectorSite string
	HubSite       string
	// FanoutCount is how many other agents' listeners may change (those
	// its tags select and those that listen now): the queue step has the
	// store queue them, so the plan, a payload in the history, stays small
	// however many agents there are.
	FanoutCount int
	// Fanout listed those agents in plans of releases before FanoutCount;
	// it is read only when such a history replays.
	Fanout []string
	// Endpoint is the hub router's host (remote control plane).
	Endpoint *string
	// Invalid explains why the service cannot be placed as it is; it is not
	// retried quickly since only an inventory change can fix it.
	Invalid string
	// Kubernetes is set on the Kubernetes control plane: the hub is the
	// ConfigMap, and most types get a Kubernetes Service.
	Kubernetes bool
}

// Finish is the outcome the finish step (the FinishService activity)
// records.
type Finish struct {
	Service          string
	Generation       int64
	ReconcileRequest int64
	ConnectorSite    string
	HubSite          string
	// Endpoint is stored on success (nil clears it); a failure keeps the
	// endpoint the service had.
	Endpoint *string
	// Error, when set, marks the service failed with this message.
	Error string
	// Since is when the request this pass answers was made, where the time
	// to ready counts from; zero when it answers none (or in passes begun
	// by a release before it was recorded).
	Since time.Time
	// Fanout: the pass queues its fan-out after it records the outcome, so
	// the service stays under way until it has (store.SetFanoutPending).
	Fanout bool
}

// Outcome is what a reconcile pass found.
type Outcome struct {
	// Planned reports that the pass read the service; the rest is known.
	Planned bool
	// Exists reports that the service's row exists (false: deleted).
	Exists bool
	// Gone reports that the service is deleted and its objects removed.
	Gone bool
	// FanoutLeft: the pass, run as a local activity, left its queue step
	// to the workflow, which runs it as a regular activity (QueueFanout)
	// whose heartbeats let another worker resume a large fan-out where a
	// dead one stopped.
	FanoutLeft bool `json:",omitzero"`
}

// Run runs one reconcile pass of the named service. A failure is recorded
// on the service (provisioningError) and returned as a retryable error
// with exactly that message and a type naming what failed; when recording
// it failed too, the message says so after it.
func Run(s Steps, name string) (Outcome, error) {
	s.Step("planning")
	plan, err := s.Plan(name)
	if err != nil {
		return Outcome{}, passError(Outcome{}, TypePlanFailed, "plan: "+Reason(err), err)
	}
	out := Outcome{Planned: true, Exists: plan.Exists}
	finish := Finish{Service: name, Generation: plan.Generation, ReconcileRequest: plan.ReconcileRequest,
		ConnectorSite: plan.ConnectorSite, HubSite: plan.HubSite, Endpoint: plan.Endpoint, Error: plan.Invalid, Since: plan.RequestedAt,
		Fanout: plan.FanoutCount > 0 && plan.Fanout == nil}
	// fail records the first failure of this pass on the service; the
	// pass ends there, with no fan-out queued.
	fail := func(typ, step string, err error) (Outcome, error) {
		if finish.Error == "" {
			finish.Error = step + ": " + Reason(err)
		}
		finish.Fanout = false
		msg := finish.Error
		if plan.Exists {
			if _, ferr := s.Finish(finish); ferr != nil {
				// provisioningError does not say it: the pass's failure
				// does, and why the service still shows what it showed.
				msg += RecordingFailed + Reason(ferr)
			}
		}
		return out, passError(out, typ, msg, err)
	}

	s.Step("writing router configs")
	if err := s.ReconcileAgents(name, plan.Sites); err != nil {
		return fail(TypeRouterWriteFailed, "write router config", err)
	}
	if plan.Kubernetes && plan.Invalid == "" {
		s.Step("reconciling the hub ConfigMap and the Kubernetes Service")
		endpoint, err := s.Kube(name)
		if err != nil {
			return fail(TypeKubernetesFailed, "Kubernetes", err)
		}
		finish.Endpoint = endpoint
	}
	if plan.Exists {
		s.Step("recording status")
		missing, err := s.Finish(finish)
		if err != nil {
			return out, passError(out, TypeStatusWriteFailed, "record status: "+Reason(err), err)
		}
		if missing != "" && plan.Invalid == "" {
			return out, temporal.NewApplicationError(missing, TypeObjectsNotInPlace, out)
		}
	}
	if plan.FanoutCount > 0 || len(plan.Fanout) > 0 {
		s.Step("queueing agents")
		if err := s.Queue(name, plan.Fanout); err != nil {
			return out, FanoutFailed(out, err)
		}
	}
	if plan.Invalid != "" {
		return out, temporal.NewApplicationError(plan.Invalid, TypeInvalidPlacement, out)
	}
	out.Gone = !plan.Exists
	return out, nil
}

// passError is a retryable failure whose message is msg alone, so that the
// Web UI shows what provisioningError says and no "retryable: false" of a
// cause. A cause's own readable type (InvalidPlacement, NoIngress) wins
// over the step's. Its details are what the pass found (OutcomeOf).
func passError(out Outcome, stepType, msg string, cause error) error {
	var app *temporal.ApplicationError
	if errors.As(cause, &app) && (app.Type() == TypeInvalidPlacement || app.Type() == TypeNoIngress) {
		stepType = app.Type()
	}
	return temporal.NewApplicationError(msg, stepType, out)
}

// FanoutFailed is the failure of a pass whose queue step failed with err.
func FanoutFailed(out Outcome, err error) error {
	return passError(out, TypeFanoutFailed, "queue agents: "+Reason(err), err)
}

// WithOutcome is Run's failure err carrying out instead of what Run found,
// for a caller that adds to the outcome.
func WithOutcome(out Outcome, err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return err
	}
	return temporal.NewApplicationError(app.Message(), app.Type(), out)
}

// OutcomeOf is what a pass that failed with err found, as Run's failures
// carry it: a workflow that ran the pass as one activity gets no result
// beside the failure, and the status it shows depends on it. Zero for any
// other error.
func OutcomeOf(err error) Outcome {
	var app *temporal.ApplicationError
	var out Outcome
	if errors.As(err, &app) && app.HasDetails() && app.Details(&out) != nil {
		return Outcome{}
	}
	return out
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
