package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
)

// PlanService reads a service, places it again (the inventory may have
// changed since it was written) and stores that placement when it moved,
// and decides with service.PassReach which agents the pass reconciles and
// how many it queues. It reads on a snapshot, beside the writers: a
// placement rarely moves, and only then does it write.
func (a *Activities) PlanService(ctx context.Context, name string) (reconcile.Plan, error) {
	var plan reconcile.Plan
	var moved *service.Placement
	err := a.Store.Read(ctx, func(tx *store.Tx) (err error) {
		plan, moved, err = a.plan(ctx, tx, name)
		return err
	})
	if err != nil {
		return plan, err
	}
	observePlan(plan)
	if moved == nil {
		return plan, nil
	}
	// The routers' queries read the stored placement. A newer generation
	// written since the snapshot keeps its own: its pass plans again.
	err = a.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.SetServicePlacement(ctx, name, plan.Generation, *moved)
	})
	return plan, err
}

// plan is PlanService's reading in tx: the plan, and the service's new
// placement when it moved (nil when it did not).
func (a *Activities) plan(ctx context.Context, tx *store.Tx, name string) (plan reconcile.Plan, moved *service.Placement, err error) {
	plan = reconcile.Plan{Kubernetes: a.ControlPlane.Kubernetes()}
	svc, err := tx.GetService(ctx, name)
	var placed *service.Placement // nil: deleted
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Deleted: the connector's routers converge now, the (maybe
		// thousands of) listening agents through the queue.
	case err != nil:
		return plan, nil, err
	default:
		plan.Exists, plan.Generation, plan.ReconcileRequest = true, svc.Generation, svc.ReconcileRequest
		if at, ok := svc.AnsweredRequest(); ok {
			plan.RequestedAt = at
		}
		in, err := tx.PlacementInput(ctx, svc, a.ControlPlane)
		if err != nil {
			return plan, nil, err
		}
		p, perr := service.Place(in)
		if perr != nil {
			plan.Invalid = perr.Error()
		}
		if !p.SameSites(svc.Placement) {
			moved = &p
		}
		plan.ConnectorSite, plan.HubSite, plan.Endpoint = p.ConnectorSite, p.HubSite, p.Endpoint
		placed = &p
	}
	reach, err := a.passReach(ctx, tx, name, placed, svc.Tags)
	plan.Sites, plan.FanoutCount = reach.Sites, len(reach.Fanout)
	return plan, moved, err
}

// observePlan records a plan of a pass that ran in the metrics.
func observePlan(plan reconcile.Plan) {
	if plan.Exists {
		metrics.Fanout.Observe(float64(plan.FanoutCount))
	}
}

// passReach decides with service.PassReach which routers a pass of the
// named service reaches, from where its objects are written, its
// placement (nil when it is deleted) and the agents its tags select.
func (a *Activities) passReach(ctx context.Context, tx *store.Tx, name string, p *service.Placement, tags []string) (service.Reach, error) {
	written, err := serviceWritten(ctx, tx, name)
	if err != nil {
		return service.Reach{}, err
	}
	var selecting []string
	if p != nil {
		if selecting, err = tx.AgentsWithTags(ctx, a.Tags.SelectingAgentTags(tags)); err != nil {
			return service.Reach{}, err
		}
	}
	return service.PassReach(written, p, selecting), nil
}

// serviceWritten is where svcbridge recorded writing a service's objects.
func serviceWritten(ctx context.Context, tx *store.Tx, name string) ([]service.Written, error) {
	entries, err := tx.ServiceEntries(ctx, name)
	out := make([]service.Written, len(entries))
	for i, e := range entries {
		out[i] = service.Written{Agent: e.Agent, Connector: e.Kind == store.KindConnector}
	}
	return out, err
}

// RecordSignalledReconcile records n reconcile signals that a person sent
// to the service's workflow outside svcbridge (the Temporal Web UI's Send a
// Signal) as the API records a reconcile request: counted on the service,
// so the pass that answers them reads their number, and an event each. A
// deleted service whose objects remain gets the events only, as from the
// API.
func (a *Activities) RecordSignalledReconcile(ctx context.Context, name string, n int) error {
	return a.Store.InTx(ctx, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		for range n {
			if err == nil {
				if _, err := tx.RequestReconcile(ctx, name); err != nil {
					return err
				}
			}
			if err := tx.RecordEvent(ctx, store.Event{Service: name, Type: store.EventNormal, Reason: store.ReasonReconcileRequested,
				Generation: svc.Generation, Message: SignalledReconcileMessage}); err != nil {
				return err
			}
		}
		return nil
	})
}

// SignalledReconcileMessage is the event of a reconcile signal sent
// outside svcbridge.
const SignalledReconcileMessage = "reconcile requested through a Temporal signal (the Web UI's Send a Signal, or the temporal CLI)"

// FinishService records the outcome of a reconcile: ready when the
// connector and the hub listener are in place, else failed with the reason,
// which it returns.
func (a *Activities) FinishService(ctx context.Context, f reconcile.Finish) (string, error) {
	var rec finished
	err := a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		rec, err = finish(ctx, tx, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return rec.report(ctx, f), nil
}

// finished is what finish recorded: whether it did (not when the service
// was deleted meanwhile, and the next reconcile cleans up, or a newer
// generation's pass follows), and the failure's reason ("" when ready or
// not recorded).
type finished struct {
	recorded bool
	reason   string
}

// finish is FinishService's writing in tx.
func finish(ctx context.Context, tx *store.Tx, f reconcile.Finish) (finished, error) {
	msg := f.Error
	if msg == "" {
		written, err := serviceWritten(ctx, tx, f.Service)
		if err != nil {
			return finished{}, err
		}
		msg = service.MissingObject(written, f.ConnectorSite, f.HubSite)
	}
	status, reason := service.StatusReady, (*string)(nil)
	if msg != "" {
		status, reason = service.StatusFailed, &msg
	}
	recorded, err := tx.SetServiceStatus(ctx, f.Service, store.PassResult{Generation: f.Generation, Request: f.ReconcileRequest,
		Status: status, Reason: reason, Endpoint: f.Endpoint, KeepEndpoint: msg != "", Fanout: f.Fanout})
	if err != nil || !recorded {
		return finished{}, err
	}
	return finished{recorded: true, reason: msg}, tx.RecordReconciled(ctx, f.Service, f.Generation, reason)
}

// report logs and counts an outcome once it is committed, and returns the
// failure it recorded ("" when none).
func (rec finished) report(ctx context.Context, f reconcile.Finish) string {
	if !rec.recorded {
		return ""
	}
	log := activity.GetLogger(ctx)
	if rec.reason != "" {
		metrics.Reconciles.WithLabelValues(service.StatusFailed).Inc()
		log.Warn(reconcile.LogPassFailed, "service", f.Service, "generation", f.Generation, "reason", rec.reason)
		return rec.reason
	}
	metrics.Reconciles.WithLabelValues(service.StatusReady).Inc()
	if !f.Since.IsZero() {
		metrics.ReadyLatency.Observe(time.Since(f.Since).Seconds())
	}
	log.Info(reconcile.LogServiceReady, "service", f.Service, "generation", f.Generation)
	return ""
}
