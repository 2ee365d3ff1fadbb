package bench

import (
	"slices"
	"strconv"
	"sync"
	"time"
)

// Latencies records the outcomes of operations: how long each one that
// succeeded took, and how many failed. It is safe for concurrent use; the
// zero value is empty.
type Latencies struct {
	mu     sync.Mutex
	ok     []time.Duration
	errors int
}

// Add records one operation that took d: a success, or a failure when err
// is not nil.
func (l *Latencies) Add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors++
		return
	}
	l.ok = append(l.ok, d)
}

// OK is how many operations succeeded.
func (l *Latencies) OK() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok)
}

// Errors is how many operations failed.
func (l *Latencies) Errors() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors
}

// Percentile is the p-th (0 < p <= 1) percentile of the successes'
// durations, in milliseconds (to the microsecond); 0 when none succeeded.
func (l *Latencies) Percentile(p float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ok) == 0 {
		return 0
	}
	slices.Sort(l.ok)
	return float64(l.ok[rank(len(l.ok), p)].Microseconds()) / 1000
}

// rank is the index of the p-th percentile of n sorted values, by nearest
// rank: the smallest value with at least p of them at or below it.
func rank(n int, p float64) int {
	i := int(float64(n)*p+0.999999) - 1
	return max(0, min(i, n-1))
}

// result is a scenario's line from its operations.
func (l *Latencies) result(scenario string, n, clients, agents int, wall time.Duration, lost int) BenchResult {
	r := BenchResult{Scenario: scenario, N: n, Clients: clients, Agents: agents, Errors: l.Errors(),
		LostEntries: lost, WallS: round(wall.Seconds(), 3)}
	if ok := l.OK(); ok > 0 {
		r.P50, r.P95, r.P99 = l.ms(0.50), l.ms(0.95), l.ms(0.99)
		r.Throughput = round(float64(ok)/wall.Seconds(), 2)
	}
	return r
}

// ms is the p-th percentile as bench's lines print it: to 0.1 ms.
func (l *Latencies) ms(p float64) float64 { return round(l.Percentile(p), 1) }

func round(f float64, digits int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', digits, 64), 64)
	return v
}
