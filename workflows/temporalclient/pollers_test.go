package temporalclient

import (
	"testing"
	"time"
)

func TestLivePollers(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		seen []time.Time
		want int
	}{
		{"none", nil, 0},
		{"polling now", []time.Time{now}, 1},
		{"idle long poll", []time.Time{now.Add(-70 * time.Second)}, 1},
		{"at the limit", []time.Time{now.Add(-PollerFresh)}, 1},
		{"left", []time.Time{now.Add(-PollerFresh - time.Second)}, 0},
		{"one of two left", []time.Time{now.Add(-time.Second), now.Add(-5 * time.Minute)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LivePollers(tc.seen, now); got != tc.want {
				t.Errorf("LivePollers = %d, want %d", got, tc.want)
			}
		})
	}
}
