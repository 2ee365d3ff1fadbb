package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

func TestChangeFlags(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		var first, second store.Changes
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "h"); err != nil {
				return err
			}
			var err error
			first, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		// Two writes within the same millisecond still order.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(routerconfig.Empty)}); err != nil {
				return err
			}
			var err error
			second, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		if second.LastUpdated <= first.LastUpdated {
			t.Fatalf("lastUpdated did not grow: %d then %d", first.LastUpdated, second.LastUpdated)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.AckChanges(ctx, "a-1", first.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || !ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the older change: %+v, %v", ch, err)
			}
			if err := tx.AckChanges(ctx, "a-1", second.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the current change: %+v, %v", ch, err)
			}
			if err := tx.WriteRouter(ctx, "nope", store.RouterWrite{Base: []byte(routerconfig.Empty)}); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("write to an agent without router: %v", err)
			}
			return nil
		})
	})
}
