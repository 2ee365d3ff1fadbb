package activities

import (
	"context"
	"slices"
	"testing"

	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// A pass as the workflow runs it: plan, rebuild the sites, record the
// outcome; the placement is stored and the edge agent is left to the queue.
func TestPassThroughTheActivities(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			p := f.plan()
			if !p.Exists || p.Invalid != "" || p.ConnectorSite != f.hub.UUID || p.HubSite != f.hub.UUID ||
				!slices.Equal(p.Sites, []string{f.hub.UUID}) || p.FanoutCount != 1 || p.Fanout != nil {
				t.Fatalf("plan %+v", p)
			}
			queued := &recordingSignaler{}
			f.acts.Signaler = queued
			if _, err := f.env.ExecuteActivity(f.acts.QueueFanout, "web"); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(queued.agents, []string{f.edge.UUID}) {
				t.Errorf("the fan-out queued %v, want the edge agent alone", queued.agents)
			}
			if got := f.status().Placement; got.ConnectorSite != f.hub.UUID || got.HubSite != f.hub.UUID || !got.OnDefaultRouter {
				t.Errorf("stored placement %+v", got)
			}

			// Recorded before the routers are written: ready needs the objects.
			in := reconcile.Finish{Service: "web", Generation: p.Generation, ConnectorSite: p.ConnectorSite, HubSite: p.HubSite, Endpoint: p.Endpoint}
			if msg := f.finish(in); msg != "the tcpConnector is not on the router of agent "+f.hub.UUID {
				t.Errorf("finish before the writes: %q", msg)
			}
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			if msg := f.finish(in); msg != "" {
				t.Errorf("finish after the writes: %q", msg)
			}
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.ServiceEndpoint == nil || *svc.ServiceEndpoint != "hub.example.com" {
				t.Errorf("status %s endpoint %v, want ready at hub.example.com", svc.ProvisioningStatus, svc.ServiceEndpoint)
			}

			// Without a default router the placement is invalid and stored
			// empty, so the hub's objects go on the next rebuild.
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				hub := f.hub
				hub.DefaultRouter = false
				return tx.UpdateAgent(ctx, &hub)
			})
			p = f.plan()
			if p.Invalid != "Default router not found: set defaultRouter on one interior agent" || !slices.Equal(p.Sites, []string{f.hub.UUID}) {
				t.Errorf("plan without a default router: %+v", p)
			}
			if got := f.status().Placement; got.ConnectorSite != "" || got.HubSite != "" {
				t.Errorf("an invalid placement was stored with sites: %+v", got)
			}
			if msg := f.finish(reconcile.Finish{Service: "web", Generation: p.Generation, Error: p.Invalid}); msg != p.Invalid {
				t.Errorf("finish of an invalid placement: %q", msg)
			}
			if svc := f.status(); svc.ProvisioningStatus != service.StatusFailed {
				t.Errorf("status %s, want failed", svc.ProvisioningStatus)
			}
		})
	}
}

// A reconcile asked for while a pass is under way is answered by the next
// pass, not by that one: the status records the request count each pass
// read when it began, and a client waits for its number.
func TestAPassAnswersOnlyTheRequestsItRead(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			run := func(p reconcile.Plan) {
				t.Helper()
				if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
					t.Fatal(err)
				}
				f.finish(reconcile.Finish{Service: "web", Generation: p.Generation, ReconcileRequest: p.ReconcileRequest,
					ConnectorSite: p.ConnectorSite, HubSite: p.HubSite, Endpoint: p.Endpoint})
			}
			underWay := f.plan()
			var request int64
			f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
				request, err = tx.RequestReconcile(ctx, "web")
				return err
			})
			run(underWay)
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.ObservedReconcileRequest >= request {
				t.Fatalf("the pass under way answered request %d: %s, observed %d", request, svc.ProvisioningStatus, svc.ObservedReconcileRequest)
			}
			run(f.plan())
			if svc := f.status(); svc.ReconcileRequest != request || svc.ObservedReconcileRequest != request {
				t.Errorf("after the next pass: request %d, observed %d, want both %d", svc.ReconcileRequest, svc.ObservedReconcileRequest, request)
			}
		})
	}
}
