package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// createHub stores the agent a-1, an interior router.
func createHub(ctx context.Context, tx *store.Tx) error {
	hub := &inventory.Agent{UUID: "a-1", Name: "hub", RouterMode: inventory.RouterInterior, Tags: []string{}, UpstreamRouters: []string{}}
	return tx.CreateAgent(ctx, hub, "hash")
}

// listener is a service's listener as a router's row holds it.
func listener(name string) []routerconfig.Held {
	return []routerconfig.Held{{Kind: store.KindListener, Service: name, JSON: []byte(`{}`)}}
}

// TestDeletingUntilObjectsGone: a deleted service is deleting while a
// router still holds one of its objects (and, on Kubernetes, until its
// cluster objects are removed), on its own, whatever else is stored.
func TestDeletingUntilObjectsGone(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			for i, name := range []string{"on-router", "in-cluster", "kept"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
				if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener(name)}); err != nil {
					return err
				}
			}
			if err := tx.DeleteService(ctx, "on-router", false); err != nil {
				return err
			}
			if err := tx.DeleteService(ctx, "in-cluster", true); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Drop: listener("in-cluster")})
		})
		deleting := func() []string {
			var names []string
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
				names, err = tx.DeletingServicesAfter(ctx, "", 0)
				return err
			})
			return names
		}
		if got := deleting(); !slices.Equal(got, []string{"in-cluster", "on-router"}) {
			t.Fatalf("deleting %v, want in-cluster (its cluster objects) and on-router (its listener)", got)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.ClearDeletion(ctx, "in-cluster"); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Drop: listener("on-router")})
		})
		if got := deleting(); len(got) != 0 {
			t.Fatalf("deleting %v after the objects went, want none", got)
		}
		// Made again under the same name: not deleting, even once pruned.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.PruneDeletions(ctx); err != nil {
				return err
			}
			if err := tx.InsertService(ctx, externalService("on-router", 20010)); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("on-router")})
		})
		if got := deleting(); len(got) != 0 {
			t.Fatalf("deleting %v with the service made again, want none", got)
		}
	})
}

// TestUnsettledAmong: of the names asked, those a reconcile has yet to
// finish: a generation not reconciled, or deleted with objects left; and
// whether an agent waits in the queue.
func TestUnsettledAmong(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			for i, name := range []string{"pending", "ready", "deleted"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
			}
			if _, err := tx.SetServiceStatus(ctx, "ready", 1, 0, service.StatusReady, nil, nil, false); err != nil {
				return err
			}
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("deleted")}); err != nil {
				return err
			}
			if err := tx.DeleteService(ctx, "deleted", false); err != nil {
				return err
			}
			return tx.QueueAgents(ctx, []string{"a-1"})
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			got, err := tx.UnsettledAmong(ctx, []string{"pending", "ready", "deleted", "unknown"})
			slices.Sort(got)
			if want := []string{"deleted", "pending"}; !slices.Equal(got, want) {
				t.Errorf("unsettled %v, want %v", got, want)
			}
			if err != nil {
				return err
			}
			for agent, want := range map[string]bool{"a-1": true, "a-2": false} {
				if queued, err := tx.AgentQueued(ctx, agent); err != nil || queued != want {
					t.Errorf("agent %s queued %v (%v), want %v", agent, queued, err, want)
				}
			}
			return nil
		})
		// A reconcile requested by an inventory change unsettles a ready
		// service until a pass that read the request finishes; the resync
		// leaves it to the API's signal for a grace period.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.RequestReconciles(ctx, []string{"ready", "unknown"})
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.UnsettledAmong(ctx, []string{"ready"}); err != nil || !slices.Equal(got, []string{"ready"}) {
				t.Errorf("after a request: unsettled %v (%v), want [ready]", got, err)
			}
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(-time.Minute)); err != nil || slices.Contains(got, "ready") {
				t.Errorf("resync within the grace: %v (%v), want no ready", got, err)
			}
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(time.Minute)); err != nil || !slices.Contains(got, "ready") {
				t.Errorf("resync after the grace: %v (%v), want ready among them", got, err)
			}
			_, err := tx.SetServiceStatus(ctx, "ready", 1, 1, service.StatusReady, nil, nil, false)
			return err
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.UnsettledAmong(ctx, []string{"ready"}); err != nil || len(got) != 0 {
				t.Errorf("after the pass that read the request: unsettled %v (%v), want none", got, err)
			}
			return nil
		})
	})
}
