package api

import (
	"context"
	"sync"
	"time"
)

// pollersTTL is how long the API trusts one answer about the task queue's
// pollers, so a list or a /readyz storm costs Temporal one call at most
// this often. noPollersTTL is how long it trusts "none": that is the
// answer an operator acts on, and a worker that starts ends it at once
// (the API is up, and asked, before its worker polls), so it is asked
// again soon.
const (
	pollersTTL   = 5 * time.Second
	noPollersTTL = 250 * time.Millisecond
)

// pollerCache remembers the last answer of Options.Pollers.
type pollerCache struct {
	mu   sync.Mutex
	at   time.Time
	n    int
	err  error
	busy chan struct{} // closed when the call in flight returns
}

// get returns the cached answer while fresh, else asks once: concurrent
// callers wait for the call in flight instead of making their own.
func (c *pollerCache) get(ctx context.Context, ask func(context.Context) (int, error)) (int, error) {
	c.mu.Lock()
	for {
		if !c.at.IsZero() && time.Since(c.at) < c.ttl() {
			n, err := c.n, c.err
			c.mu.Unlock()
			return n, err
		}
		if c.busy == nil {
			break
		}
		busy := c.busy
		c.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		c.mu.Lock()
	}
	busy := make(chan struct{})
	c.busy = busy
	c.mu.Unlock()

	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	n, err := ask(actx)
	cancel()

	c.mu.Lock()
	c.at, c.n, c.err, c.busy = time.Now(), n, err, nil
	c.mu.Unlock()
	close(busy)
	return n, err
}

// ttl is how long the cached answer is trusted.
func (c *pollerCache) ttl() time.Duration {
	if c.err == nil && c.n == 0 {
		return noPollersTTL
	}
	return pollersTTL
}

// workerCheck is what the API says about the workers: check for /readyz
// ("ok", the reason none works, or that Temporal could not tell), and the
// note a pending service carries when no worker polls the task queue,
// which is why it stays pending.
func workerCheck(pollers int, err error, taskQueue string) (check, note string) {
	switch {
	case err != nil:
		return "unknown: " + err.Error(), ""
	case pollers == 0:
		note = "no worker is polling task queue " + taskQueue
		return note, note
	default:
		return "ok", ""
	}
}

// workers asks, through the cache, whether a worker polls the task queue;
// both are "" and pollers nil when the API was not told how to ask, or
// Temporal could not tell.
func (s *Server) workers(ctx context.Context) (check, note string, pollers *int) {
	if s.Pollers == nil {
		return "", "", nil
	}
	n, err := s.pollers.get(ctx, s.Pollers)
	if err == nil {
		pollers = &n
	}
	check, note = workerCheck(n, err, s.TaskQueue)
	return check, note, pollers
}
