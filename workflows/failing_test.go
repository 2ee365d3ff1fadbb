package workflows

import (
	"testing"
	"time"

	"svcbridge/reconcile"
)

func TestRetryWait(t *testing.T) {
	for _, c := range []struct {
		attempts int
		want     time.Duration
	}{
		{0, 0}, {1, 0}, // the fast path failed: retry as an activity at once
		{2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{9, 256 * time.Second}, {10, 5 * time.Minute}, {1000000, 5 * time.Minute},
	} {
		if got := (Timing{}).withDefaults().retryWait(c.attempts); got != c.want {
			t.Errorf("retryWait(%d) = %s, want %s", c.attempts, got, c.want)
		}
	}
}

func TestFailureStreak(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 14, 57, 56, 0, time.UTC)
	f := failed(failed(reconcile.FailureStreak{}, t0), t0.Add(time.Minute))
	if f != (reconcile.FailureStreak{Since: t0, Attempts: 2}) {
		t.Fatalf("two failures: %+v, want since the first", f)
	}
	if got, want := summary(f, "checkout"), "Reconcile service checkout: attempt 3, after 2 failed since 2026-12-03 14:57:56 UTC"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got, want := (Timing{}).withDefaults().retrying(f), "failing since 2026-12-03 14:57:56 UTC, 2 failed attempts; retrying in 2s (signal reconcile to retry now)"; got != want {
		t.Errorf("retrying %q, want %q", got, want)
	}
}
