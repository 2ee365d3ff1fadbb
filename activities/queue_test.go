package activities

import (
	"context"
	"strings"
	"testing"

	"svcbridge/inventory"
	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// A batch of the agent queue reconciles its agents in one transaction; an
// agent whose document cannot be planned (not JSON) fails alone and stays
// queued, while the others get their listeners and leave the queue.
func TestADrainBatchFailsOnlyTheAgentItCannotPlan(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			others := []inventory.Agent{
				{UUID: "00000000-0000-0000-0000-00000000000c", Name: "edge-c", RouterMode: inventory.RouterEdge,
					Tags: []string{service.DefaultTagPrefix + ": all"}, UpstreamRouters: []string{}},
				{UUID: "00000000-0000-0000-0000-00000000000d", Name: "edge-d", RouterMode: inventory.RouterEdge,
					Tags: []string{service.DefaultTagPrefix + ": all"}, UpstreamRouters: []string{}},
			}
			all := []string{f.edge.UUID, others[0].UUID, others[1].UUID}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				for i := range others {
					if err := tx.CreateAgent(ctx, &others[i], "hash-"+others[i].Name); err != nil {
						return err
					}
				}
				if err := tx.WriteRouter(ctx, others[1].UUID, store.RouterWrite{Base: []byte(`{"bridges":`)}); err != nil {
					return err
				}
				return tx.QueueAgents(ctx, all)
			})
			versions := map[string]string{}
			f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
				for _, u := range all {
					if versions[u], err = tx.RouterVersion(ctx, u); err != nil {
						return err
					}
				}
				return nil
			})
			v, err := f.env.ExecuteActivity(f.acts.DrainAgents, 10)
			if err != nil {
				t.Fatal(err)
			}
			var batch reconcile.AgentBatch
			if err := v.Get(&batch); err != nil {
				t.Fatal(err)
			}
			if batch.Claimed != 3 || len(batch.Failed) != 1 || !strings.HasPrefix(batch.Failed[0], others[1].UUID+": ") {
				t.Errorf("batch %+v, want 3 claimed and edge-d failed", batch)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				for _, u := range all {
					held, err := tx.RouterObjects(ctx, u, "web")
					if err != nil {
						return err
					}
					queued, err := tx.AgentQueued(ctx, u)
					if err != nil {
						return err
					}
					version, err := tx.RouterVersion(ctx, u)
					if err != nil {
						return err
					}
					changes, err := tx.AgentChanges(ctx, u)
					if err != nil {
						return err
					}
					failing := u == others[1].UUID
					if (len(held) == 1) == failing || queued != failing || (version == versions[u]) != failing || !changes.MicroserviceConfig {
						t.Errorf("agent %s: holds %v, queued %v, version %s (was %s), changes %+v; want the listener, no mark, a new version and the flag raised, or for edge-d none but the flag",
							u, held, queued, version, versions[u], changes)
					}
				}
				return nil
			})
		})
	}
}
