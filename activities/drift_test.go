package activities

import (
	"context"
	"testing"

	"svcbridge/reconcile"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestDriftCheckCountsOnlyRepairs: a drift check that finds a service's
// objects missing because its reconcile is still to come does that work
// without calling it a repair (a burst of creates raised the drift alert);
// an object someone else put in the router is a repair.
func TestDriftCheckCountsOnlyRepairs(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)

			// web is pending: planned (the API stores the placement), its
			// routers not written yet.
			p := f.plan()
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs for a service being created", got)
			}
			if n := f.holds(f.hub.UUID); n != 2 {
				t.Fatalf("after the drift check the hub holds %d objects of web, want its listener and connector", n)
			}

			// web's pass finishes; someone adds a listener in svcbridge's name.
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			f.finish(reconcile.Finish{Service: "web", Generation: p.Generation})
			if s := f.status(); s.ProvisioningStatus != service.StatusReady {
				t.Fatalf("web is %s", s.ProvisioningStatus)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Base: []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{"stray-listener":{"name":"stray-listener"}}}}`)})
			})
			if got := f.drift(); got != 1 {
				t.Errorf("the drift check counted %v repairs of a hand-edited hub, want 1", got)
			}

			// web is deleted; the drift check removes its objects before
			// web's last pass does.
			f.tx(func(ctx context.Context, tx *store.Tx) error { return tx.DeleteService(ctx, "web", false) })
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs for a service being deleted", got)
			}
			if n := f.holds(f.hub.UUID); n != 0 {
				t.Errorf("after the drift check the hub holds %d objects of the deleted web", n)
			}
		})
	}
}

// A pass records its outcome before it queues its fan-out: until it has,
// the drift check writing the service's objects on an agent of the
// fan-out does the pass's work, and is no repair. Once queued, a hand
// edit of that agent is one.
func TestDriftCheckBeforeTheFanoutIsQueued(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			f.acts.Signaler = &recordingSignaler{}

			p := f.plan()
			if p.FanoutCount != 1 {
				t.Fatalf("web's pass reaches %d agents beyond its sites, want the edge", p.FanoutCount)
			}
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			f.finish(reconcile.Finish{Service: "web", Generation: p.Generation, Fanout: true})
			if s := f.status(); s.ProvisioningStatus != service.StatusReady {
				t.Fatalf("web is %s", s.ProvisioningStatus)
			}
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs before web's fan-out was queued", got)
			}
			if n := f.holds(f.edge.UUID); n != 1 {
				t.Fatalf("after the drift check the edge holds %d objects of web, want its listener", n)
			}

			if _, err := f.env.ExecuteActivity(f.acts.QueueFanout, "web"); err != nil {
				t.Fatal(err)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.edge.UUID, store.RouterWrite{Drop: []routerconfig.Held{{Kind: routerconfig.KindListener, Service: "web"}}})
			})
			if got := f.drift(); got != 1 {
				t.Errorf("the drift check counted %v repairs of a hand-edited edge after the fan-out was queued, want 1", got)
			}
		})
	}
}
