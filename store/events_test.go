package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"svcbridge/store"
	"svcbridge/store/storetest"
)

func event(svc, reason, msg string) store.Event {
	return store.Event{Service: svc, Type: store.EventNormal, Reason: reason, Message: msg, Generation: 1}
}

func listEvents(t *testing.T, s *store.Store, svc string, after store.EventCursor, limit int) []store.Event {
	t.Helper()
	var es []store.Event
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
		es, err = tx.ListEvents(ctx, svc, after, limit)
		return err
	})
	return es
}

func record(t *testing.T, s *store.Store, es ...store.Event) {
	t.Helper()
	for _, e := range es {
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.RecordEvent(ctx, e) })
	}
}

// summary is what a test compares of events: who, why, how often.
func summary(es []store.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s %s %s x%d", e.Service, e.Reason, e.Message, e.Count)
	}
	return out
}

func TestEventsNewestFirstCountedAndPaged(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		record(t, s, event("a", store.ReasonCreated, "one"), event("b", store.ReasonCreated, "one"),
			event("a", store.ReasonReady, "two"), event("a", store.ReasonReady, "two"), event("b", store.ReasonDeleted, "three"))
		all := listEvents(t, s, "", nil, 0)
		want := []string{"b Deleted three x1", "a Ready two x2", "b Created one x1", "a Created one x1"}
		if got := summary(all); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("events = %q, want %q", got, want)
		}
		if e := all[1]; !e.LastTimestamp.After(e.FirstTimestamp) {
			t.Errorf("a repeat keeps the first time and moves the last: first %v, last %v", e.FirstTimestamp, e.LastTimestamp)
		}
		if got := summary(listEvents(t, s, "a", nil, 0)); fmt.Sprint(got) != fmt.Sprint([]string{want[1], want[3]}) {
			t.Errorf("events of a = %q", got)
		}
		// Pages of one resume after the last one served, as the API's
		// continue token does.
		var paged []store.Event
		var after store.EventCursor
		for range len(all) + 1 {
			page := listEvents(t, s, "", after, 1)
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			after = page[0].Cursor()
		}
		if fmt.Sprint(summary(paged)) != fmt.Sprint(want) {
			t.Errorf("paged events = %q, want %q", summary(paged), want)
		}
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			_, err := tx.ListEvents(ctx, "", store.EventCursor{"yesterday", "a", "1"}, 1)
			return err
		})
		if !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("a forged cursor: err = %v, want ErrBadCursor", err)
		}
	})
}

func TestEventsKeepTheLastPerService(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for i := range store.EventsPerService + 5 {
				if err := tx.RecordEvent(ctx, event("a", store.ReasonUpdated, fmt.Sprint(i))); err != nil {
					return err
				}
			}
			return tx.RecordEvent(ctx, event("b", store.ReasonCreated, "kept"))
		})
		a := listEvents(t, s, "a", nil, 0)
		if len(a) != store.EventsPerService || a[0].Message != fmt.Sprint(store.EventsPerService+4) || a[len(a)-1].Message != "5" {
			t.Fatalf("a keeps %d events, %q to %q; want the last %d", len(a), a[0].Message, a[len(a)-1].Message, store.EventsPerService)
		}
		if b := listEvents(t, s, "b", nil, 0); len(b) != 1 {
			t.Errorf("another service's events were pruned: %q", summary(b))
		}
	})
}

// TestEventsRecordedConcurrently: transactions recording events of one
// service at once all succeed, each event numbered once.
func TestEventsRecordedConcurrently(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				errs <- inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
					return tx.RecordEvent(ctx, event("a", store.ReasonUpdated, fmt.Sprint(i)))
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := listEvents(t, s, "a", nil, 0); len(got) != n {
			t.Fatalf("%d events recorded, want %d: %q", len(got), n, summary(got))
		}
	})
}

func TestRecordReconciled(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		reason := "the hub tcpListener is not on the router of agent a-1"
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.RecordReconciled(ctx, "svc", 1, &reason); err != nil {
				return err
			}
			return tx.RecordReconciled(ctx, "svc", 1, nil)
		})
		got := listEvents(t, s, "svc", nil, 0)
		if len(got) != 2 || got[1].Type != store.EventWarning || got[1].Reason != store.ReasonFailed || got[1].Message != reason ||
			got[0].Type != store.EventNormal || got[0].Reason != store.ReasonReady || got[0].Message != "generation 1 reconciled: its connector and hub listener are in place" {
			t.Fatalf("events = %+v", got)
		}
	})
}

// TestEventsLearnTheTransactionID: on PostgreSQL recording an event, new
// or repeated, learns the transaction's id in its own round trip, so the
// commit needs no query for it (a create's and a reconcile's last write);
// the id must be the transaction's, or a commit whose connection broke
// would be looked up under another.
func TestEventsLearnTheTransactionID(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	for _, what := range []string{"new", "repeated"} {
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.RecordEvent(ctx, event("web", store.ReasonCreated, "once")); err != nil {
				return err
			}
			var xid int64
			if err := tx.Get(ctx, &xid, `SELECT txid_current()`); err != nil {
				return err
			}
			if got := tx.LearnedXID(); got != xid {
				t.Errorf("%s event: learned transaction id %d, want %d", what, got, xid)
			}
			return nil
		})
	}
	if es := listEvents(t, s, "web", nil, 0); len(es) != 1 || es[0].Count != 2 {
		t.Errorf("events: %v, want one counted twice", summary(es))
	}
}
