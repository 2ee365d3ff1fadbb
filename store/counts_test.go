package store_test

import (
	"context"
	"testing"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/wire"
)

// TestCounts: the scrape-time gauges count the services by status, the
// deleted ones whose objects remain, and the agents with an
// unacknowledged change and the oldest such change.
func TestCounts(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		ctx := context.Background()
		if got, err := s.Counts(ctx); err != nil || got != (store.Counts{}) {
			t.Fatalf("empty store: %+v, %v; want all zero", got, err)
		}
		reason := "no route"
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			statuses := []string{service.StatusReady, service.StatusReady, service.StatusReady,
				service.StatusFailed, service.StatusPending, service.StatusPending, service.StatusReady}
			for i, status := range statuses {
				name := "s" + string(rune('a'+i))
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
				var r *string
				if status == service.StatusFailed {
					r = &reason
				}
				if status != service.StatusPending {
					if _, err := tx.SetServiceStatus(ctx, name, store.PassResult{Generation: 1, Status: status, Reason: r}); err != nil {
						return err
					}
				}
			}
			// sg was ready; deleted with its listener still on the hub.
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("sg")}); err != nil {
				return err
			}
			return tx.DeleteService(ctx, "sg", false)
		})
		got, err := s.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var changes store.Changes
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
			changes, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		want := store.Counts{Ready: 3, Pending: 2, Failed: 1, Deleting: 1,
			AgentsUnacknowledged: 1, OldestUnacknowledged: changes.LastUpdated}
		if got != want || changes.LastUpdated == 0 {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.AckChanges(ctx, "a-1", changes.LastUpdated)
		})
		if got, err := s.Counts(ctx); err != nil || got.AgentsUnacknowledged != 0 || got.OldestUnacknowledged != 0 {
			t.Fatalf("after the hub acknowledged: %+v, %v; want no agent behind", got, err)
		}

		// The hub's router side reports two bridges its router refused,
		// and then that it cannot reach its router.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.SaveRouterReport(ctx, "a-1", wire.RouterReport{Version: `"1"`, Failed: []wire.FailedBridge{
				{Type: "tcpListener", Name: "sa-listener", Reason: "Address already in use"},
				{Type: "tcpConnector", Name: "sb-connector", Reason: "Unknown attribute"}}})
		})
		if got, err := s.Counts(ctx); err != nil || got.BridgesRefused != 2 || got.RoutersBehind != 0 {
			t.Fatalf("after a report of two refused bridges: %+v, %v", got, err)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.SaveRouterReport(ctx, "a-1", wire.RouterReport{Version: `"1"`, Error: "router unreachable: connection refused"})
		})
		if got, err := s.Counts(ctx); err != nil || got.BridgesRefused != 0 || got.RoutersBehind != 1 {
			t.Fatalf("after a report of an unreachable router: %+v, %v", got, err)
		}
	})
}
