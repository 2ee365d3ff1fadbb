package activities

import (
	"context"
	"strings"
	"testing"

	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// The fast path's pass (ReconcileService as a local activity) commits the
// plan, the hub's objects and the outcome together: the service is ready
// with its objects in place after one transaction on PostgreSQL, and the
// edge agent is left to the workflow's queue step.
func TestALocalPassIsOneTransaction(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			_, before := store.Sent()
			out := f.localPass(t)
			_, after := store.Sent()
			if !out.Planned || !out.Exists || out.Gone || !out.FanoutLeft {
				t.Errorf("outcome %+v, want planned, existing, its fan-out left", out)
			}
			if dialect == store.Postgres && after-before != 1 {
				t.Errorf("the pass took %d transactions, want 1", after-before)
			}
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.Placement.HubSite != f.hub.UUID {
				t.Errorf("status %s placement %+v, want ready on the hub", svc.ProvisioningStatus, svc.Placement)
			}
			if n := f.holds(f.hub.UUID); n != 2 {
				t.Errorf("the hub holds %d objects of web, want its listener and connector", n)
			}
		})
	}
}

// A local pass that fails is not rolled back with its failure: the steps
// run again one by one, and the service shows why it failed.
func TestALocalPassThatFailsRecordsWhy(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Base: []byte(`{"bridges":`)})
			})
			_, err := f.env.ExecuteLocalActivity(f.acts.ReconcileService, "web")
			if err == nil || !strings.Contains(err.Error(), "write router config: agent hub: ") {
				t.Fatalf("pass error %v, want the hub's router config refused", err)
			}
			if out := reconcile.OutcomeOf(err); !out.Planned || !out.Exists {
				t.Errorf("the failure carries %+v, want what the pass found", out)
			}
			svc := f.status()
			if svc.ProvisioningStatus != service.StatusFailed || svc.ProvisioningError == nil ||
				!strings.HasPrefix(*svc.ProvisioningError, "write router config: agent hub: ") {
				t.Errorf("status %s error %v, want failed with the router config's reason", svc.ProvisioningStatus, svc.ProvisioningError)
			}

			// Mended, the next pass is ready again in one go.
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Base: []byte(`{}`)})
			})
			f.localPass(t)
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.ProvisioningError != nil {
				t.Errorf("after the mend: status %s error %v, want ready", svc.ProvisioningStatus, svc.ProvisioningError)
			}
		})
	}
}

// localPass runs web's pass as the fast path does.
func (f *fixture) localPass(t *testing.T) reconcile.Outcome {
	t.Helper()
	v, err := f.env.ExecuteLocalActivity(f.acts.ReconcileService, "web")
	if err != nil {
		t.Fatal(err)
	}
	var out reconcile.Outcome
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
