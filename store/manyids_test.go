package store_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/wire"
)

// TestReadsOfMoreAgentsThanAStatementTakes: what the agents' list reads of
// every agent (their tags, names, reports and change flags) is read for a
// fleet of more agents than one statement takes parameters (PostgreSQL
// 65,535, SQLite 32,766): asked with 70,000 uuids, the store answers for
// those that are agents'.
func TestReadsOfMoreAgentsThanAStatementTakes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		st := storetest.Open(t, dialect)
		err := inTx(t, st, func(ctx context.Context, tx *store.Tx) error {
			for _, a := range []*inventory.Agent{agent("a-1", "plant-b", inventory.RouterEdge, false), agent("a-2", "plant-a", inventory.RouterEdge, false)} {
				a.Tags = []string{"east"}
				if err := tx.CreateAgent(ctx, a, "hash-"+a.UUID); err != nil {
					return err
				}
			}
			return tx.SaveRouterReport(ctx, "a-1", wire.RouterReport{Version: `"1"`, Error: "router unreachable"})
		})
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{"a-1"}
		for i := range 70000 {
			ids = append(ids, fmt.Sprintf("no-agent-%05d", i))
		}
		ids = append(ids, "a-2")
		err = st.Read(context.Background(), func(tx *store.Tx) error {
			ctx := context.Background()
			agents, err := tx.ListAgentsIn(ctx, ids)
			if err != nil {
				return fmt.Errorf("ListAgentsIn: %w", err)
			}
			if len(agents) != 2 || agents[0].Name != "plant-a" || agents[1].Name != "plant-b" || !slices.Equal(agents[1].Tags, []string{"east"}) {
				t.Errorf("ListAgentsIn: %+v, want plant-a and plant-b, by name, with their tags", agents)
			}
			names, err := tx.AgentNames(ctx, ids)
			if err != nil {
				return fmt.Errorf("AgentNames: %w", err)
			}
			if !maps.Equal(names, map[string]string{"a-1": "plant-b", "a-2": "plant-a"}) {
				t.Errorf("AgentNames: %v", names)
			}
			reports, err := tx.RouterReports(ctx, ids)
			if err != nil {
				return fmt.Errorf("RouterReports: %w", err)
			}
			if len(reports) != 1 || reports["a-1"].Error != "router unreachable" {
				t.Errorf("RouterReports: %+v, want a-1's", reports)
			}
			changes, err := tx.AgentsChanges(ctx, ids)
			if err != nil {
				return fmt.Errorf("AgentsChanges: %w", err)
			}
			if len(changes) != 2 || changes["a-1"].LastUpdated == 0 || changes["a-2"].LastUpdated == 0 {
				t.Errorf("AgentsChanges: %+v, want a-1's and a-2's", changes)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
