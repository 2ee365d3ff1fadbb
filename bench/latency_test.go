package bench

import (
	"errors"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, n := range v {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		name string
		d    []time.Duration
		p    float64
		want float64
	}{
		{"none", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7},
		{"median of an odd count", ms(5, 1, 3, 2, 4), 0.5, 3},
		{"median of an even count: the lower", ms(4, 1, 3, 2), 0.5, 2},
		// Nearest rank: the smallest with at least p of them at or below.
		{"p90 of 10", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9},
		{"p99 of 10", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10},
		{"p95 of 20", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.95, 19},
		{"to the microsecond", []time.Duration{1234567 * time.Nanosecond}, 0.5, 1.234},
	} {
		var l Latencies
		for _, d := range c.d {
			l.Add(d, nil)
		}
		l.Add(time.Hour, errors.New("failed")) // failures are counted, not timed
		if got := l.Percentile(c.p); got != c.want {
			t.Errorf("%s: Percentile(%v) = %v, want %v", c.name, c.p, got, c.want)
		}
		if l.OK() != len(c.d) || l.Errors() != 1 {
			t.Errorf("%s: %d ok, %d errors", c.name, l.OK(), l.Errors())
		}
	}
}
