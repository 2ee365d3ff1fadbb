package cli

import (
	"testing"
	"time"
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
		e := Event{Count: c.count, FirstTimestamp: now.Add(-c.first), LastTimestamp: now.Add(-c.last)}
		if got := eventAge(e, now); got != c.want {
			t.Errorf("count %d, first %s, last %s ago: %q, want %q", c.count, c.first, c.last, got, c.want)
		}
	}
}
