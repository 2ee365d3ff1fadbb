package cli

import (
	"testing"
	"time"

	"svcbridge/wire"
)

func TestEventAge(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		count       int64
		first, last time.Duration // before now
		want        string
	}{
		{1, 5 * time.Minute, 5 * time.Minute, "5m"},
		{3, 2 * time.Hour, time.Minute, "1m (x3 over 2h)"},
	} {
		e := Event{Count: c.count, FirstTimestamp: wire.Time(now.Add(-c.first)), LastTimestamp: wire.Time(now.Add(-c.last))}
		if got := eventAge(e, now); got != c.want {
			t.Errorf("count %d, first %s, last %s ago: %q, want %q", c.count, c.first, c.last, got, c.want)
		}
	}
}

func TestFailingStreak(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	ev := func(reason string, count int64, first time.Duration) Event {
		return Event{Reason: reason, Count: count, FirstTimestamp: wire.Time(t0.Add(first)), LastTimestamp: wire.Time(t0.Add(first))}
	}
	for _, c := range []struct {
		name      string
		events    []Event // newest first
		truncated bool
		want      streak
	}{
		{"never failed", []Event{ev("Ready", 1, 2), ev("Created", 1, 1)}, false, streak{}},
		{"ready again", []Event{ev("Ready", 1, 3), ev("Failed", 4, 2), ev("Created", 1, 1)}, false, streak{}},
		{"across reconcile requests and updates", []Event{ev("Failed", 3, 6), ev("ReconcileRequested", 1, 5), ev("Failed", 2, 4),
			ev("Updated", 1, 3), ev("Failed", 4, 2), ev("Ready", 1, 1)}, false, streak{since: wire.Time(t0.Add(2)), attempts: 9}},
		{"since creation", []Event{ev("Failed", 2, 2), ev("Created", 1, 1)}, false, streak{since: wire.Time(t0.Add(2)), attempts: 2}},
		{"older events dropped", []Event{ev("Failed", 2, 3), ev("ReconcileRequested", 1, 2)}, true, streak{since: wire.Time(t0.Add(3)), attempts: 2, before: true}},
	} {
		if got := failingStreak(c.events, c.truncated); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
