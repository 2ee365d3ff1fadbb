package store_test

import (
	"context"
	"testing"
	"time"

	"svcbridge/reconcile"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestQueueOutlook: the agent queue's workflow learns how many agents a
// window could claim (up to its limit) and when the earliest held lease
// ends; a claimed agent is not claimable until its lease ends.
func TestQueueOutlook(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		ctx := context.Background()
		outlook := func(limit int) reconcile.QueueOutlook {
			t.Helper()
			q, err := s.QueueOutlook(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		if q := outlook(1000); q != (reconcile.QueueOutlook{}) {
			t.Fatalf("empty queue: %+v, want nothing claimable and no lease", q)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.QueueAgents(ctx, []string{"a", "b", "c", "d"})
		})
		if q := outlook(1000); q.Claimable != 4 || !q.NextLease.IsZero() {
			t.Fatalf("4 queued: %+v, want 4 claimable and no lease", q)
		}
		if q := outlook(3); q.Claimable != 3 {
			t.Fatalf("limit 3: %+v, want the count to stop at 3", q)
		}

		var claimed []store.QueuedAgent
		before := time.Now()
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
			claimed, err = tx.ClaimQueuedAgents(ctx, 2, time.Minute)
			return err
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.RetryQueuedAgents(ctx, claimed[:1], time.Now().Add(30*time.Second))
		})
		q := outlook(1000)
		if q.Claimable != 2 {
			t.Errorf("2 of 4 leased: %d claimable, want 2", q.Claimable)
		}
		// The earliest lease is the failed agent's shortened one.
		if low, high := before.Add(30*time.Second), time.Now().Add(30*time.Second); q.NextLease.Before(low) || q.NextLease.After(high) {
			t.Errorf("next lease ends %v, want between %v and %v", q.NextLease, low, high)
		}

		// One of them is marked again while its reconcile runs: that
		// newer mark outlives the done.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.QueueAgents(ctx, []string{claimed[1].Agent}) })
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DoneQueuedAgents(ctx, claimed) })
		if q := outlook(1000); q.Claimable != 3 || !q.NextLease.IsZero() {
			t.Errorf("leased agents done, one marked again: %+v, want 3 claimable and no lease", q)
		}
	})
}
