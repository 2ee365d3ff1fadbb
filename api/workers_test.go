package api

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWorkerCheck(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pollers     int
		err         error
		check, note string
	}{
		{"a worker polls", 1, nil, "ok", ""},
		{"several", 3, nil, "ok", ""},
		{"none", 0, nil, "no worker is polling task queue svcbridge", "no worker is polling task queue svcbridge"},
		{"Temporal cannot tell", 0, errors.New("connection refused"), "unknown: connection refused", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, note := workerCheck(tc.pollers, tc.err, "svcbridge")
			if check != tc.check || note != tc.note {
				t.Errorf("workerCheck = %q, %q; want %q, %q", check, note, tc.check, tc.note)
			}
		})
	}
}

// TestPollerCacheStorm: many requests at once cost Temporal one call, and
// the answer is reused while fresh.
func TestPollerCacheStorm(t *testing.T) {
	var c pollerCache
	var calls atomic.Int32
	release := make(chan struct{})
	ask := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 2, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 50)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.get(context.Background(), ask)
		}()
	}
	for calls.Load() == 0 {
		runtime.Gosched() // until the first request asks; the others queue behind it
	}
	close(release)
	wg.Wait()
	if n, _ := c.get(context.Background(), ask); n != 2 {
		t.Errorf("cached answer %d, want 2", n)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("%d calls to Temporal for 51 requests, want 1", got)
	}
	for i, n := range results {
		if n != 2 {
			t.Fatalf("request %d got %d pollers, want 2", i, n)
		}
	}
}

// A worker that starts after the API answered "none" is seen within
// noPollersTTL, not pollersTTL: status and /readyz do not say no worker
// polls while one does. A worker seen is trusted for pollersTTL.
func TestPollerCacheAsksAgainSoonAfterNone(t *testing.T) {
	var c pollerCache
	pollers := 0
	var calls int
	ask := func(context.Context) (int, error) {
		calls++
		return pollers, nil
	}
	ctx := context.Background()
	if n, _ := c.get(ctx, ask); n != 0 {
		t.Fatalf("%d pollers, want 0", n)
	}
	pollers = 1 // the worker starts
	c.at = time.Now()
	if n, _ := c.get(ctx, ask); n != 0 || calls != 1 {
		t.Fatalf("within noPollersTTL: %d pollers after %d calls, want the cached 0 after 1", n, calls)
	}
	c.at = time.Now().Add(-noPollersTTL)
	if n, _ := c.get(ctx, ask); n != 1 || calls != 2 {
		t.Fatalf("after noPollersTTL: %d pollers after %d calls, want 1 after 2", n, calls)
	}
	pollers = 0 // the worker stops
	c.at = time.Now().Add(-noPollersTTL)
	if n, _ := c.get(ctx, ask); n != 1 || calls != 2 {
		t.Fatalf("%d pollers after %d calls, want the cached 1 after 2: a worker seen is trusted for pollersTTL", n, calls)
	}
	c.at = time.Now().Add(-pollersTTL)
	if n, _ := c.get(ctx, ask); n != 0 || calls != 3 {
		t.Fatalf("after pollersTTL: %d pollers after %d calls, want 0 after 3", n, calls)
	}
}
