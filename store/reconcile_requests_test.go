package store_test

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

// A reconcile requested by an inventory change is recorded as each
// service's ReconcileRequested event with its cause, at the service's
// generation, counted again when the same change repeats, kept to
// EventsPerService; however many services (past one IN list of 500).
func TestReconcileRequestsRecordTheirCause(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		var names []string
		for i := range 502 {
			names = append(names, fmt.Sprintf("s%03d", i))
		}
		createServices(t, s, names)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for i := range store.EventsPerService {
				if err := tx.RecordEvent(ctx, event("s000", store.ReasonUpdated, fmt.Sprint(i))); err != nil {
					return err
				}
			}
			return nil
		})
		const cause = "reconcile requested by a change of agent fog-a"
		request := func(cause string) {
			t.Helper()
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				return tx.RequestReconcilesFor(ctx, append([]string{"unknown"}, names...), cause)
			})
		}
		request(cause)
		for _, name := range []string{"s001", "s500", "s501"} {
			es := listEvents(t, s, name, nil, 0)
			if len(es) != 1 || es[0].Reason != store.ReasonReconcileRequested || es[0].Message != cause || es[0].Generation != 1 || es[0].Type != store.EventNormal {
				t.Fatalf("events of %s: %+v, want one ReconcileRequested %q at generation 1", name, es, cause)
			}
		}
		if es := listEvents(t, s, "s000", nil, 0); len(es) != store.EventsPerService || es[0].Message != cause || es[len(es)-1].Message != "1" {
			t.Errorf("s000 keeps %d events, %q to %q; want the last %d", len(es), es[0].Message, es[len(es)-1].Message, store.EventsPerService)
		}
		if es := listEvents(t, s, "unknown", nil, 0); len(es) != 0 {
			t.Errorf("a service that does not exist got events: %q", summary(es))
		}

		// s002 had another event since: the same change is new to it.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.RecordEvent(ctx, event("s002", store.ReasonUpdated, "between"))
		})
		request(cause) // the same change again: counted
		request("")    // counted on the service, no event
		for _, name := range []string{"s001", "s501"} {
			es := listEvents(t, s, name, nil, 0)
			if want := []string{name + " ReconcileRequested " + cause + " x2"}; fmt.Sprint(summary(es)) != fmt.Sprint(want) {
				t.Errorf("events of %s: %q, want %q", name, summary(es), want)
			}
		}
		want := []string{"s002 ReconcileRequested " + cause + " x1", "s002 Updated between x1", "s002 ReconcileRequested " + cause + " x1"}
		if es := listEvents(t, s, "s002", nil, 0); fmt.Sprint(summary(es)) != fmt.Sprint(want) {
			t.Errorf("events of s002: %q, want %q", summary(es), want)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			svc, err := tx.GetService(ctx, "s501")
			if err == nil && svc.ReconcileRequest != 3 {
				t.Errorf("s501 counts %d reconcile requests, want 3", svc.ReconcileRequest)
			}
			return err
		})
	})
}

// Transactions recording events of overlapping services at once, many at
// a time or one, all succeed, each event numbered once.
func TestReconcileRequestsRecordedConcurrently(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		names := []string{"a", "b", "c", "d"}
		createServices(t, s, names)
		const n = 12
		var g errgroup.Group
		for i := range n {
			g.Go(func() error {
				return inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
					if i%3 == 0 {
						return tx.RecordEvent(ctx, event(names[i%len(names)], store.ReasonUpdated, fmt.Sprint(i)))
					}
					// Each its own list, in another order.
					list := append(append([]string{}, names[i%len(names):]...), names[:i%len(names)]...)
					return tx.RequestReconcilesFor(ctx, list, fmt.Sprint("change ", i))
				})
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, name := range names {
			total += len(listEvents(t, s, name, nil, 0))
		}
		if want := (n/3)*1 + (n-n/3)*len(names); total != want {
			t.Fatalf("%d events recorded, want %d", total, want)
		}
	})
}

// createServices stores the hub and an external service of each name.
func createServices(t *testing.T, s *store.Store, names []string) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		if err := createHub(ctx, tx); err != nil {
			return err
		}
		for i, name := range names {
			if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
				return err
			}
		}
		return nil
	})
}
