package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// batches run the write transactions of InBatch's callers that wait at
// the same time in one transaction (a group commit): its BEGIN, its commit
// (a WAL flush on PostgreSQL, the one writer's turn on SQLite), its change
// notification and its last writes (a router's version bump: one
// statement for every router the batch changed) are paid once for the
// batch, and passes of many services on one hub no longer queue for its
// row lock one commit after another. A caller that finds fewer than
// batchesAtOnce batches running runs at once, as InTx would run it.
type batches struct {
	mu      sync.Mutex
	waiting []*batched
	running int
}

// Up to batchesAtOnce batches run at once, each of up to batchMax callers:
// two keep both cores of a small database busy while one waits for a round
// trip; a batch holds its callers' locks until its commit, so it stays short.
const (
	batchesAtOnce = 2
	batchMax      = 16
)

// batched is one caller's work in a batch.
type batched struct {
	ctx  context.Context
	fn   func(*Tx) error
	done chan error
}

// memberFailed is the error of member i of a batch, which rolled the
// batch back.
type memberFailed struct {
	i   int
	err error
}

func (m memberFailed) Error() string { return m.err.Error() }
func (m memberFailed) Unwrap() error { return m.err }

// InBatch runs fn as InTx does, in one transaction with the fns of other
// callers of InBatch waiting at the same time, one after another (each
// sees what those before it wrote); fn must not depend on being alone.
// When fn fails, its error is returned and nothing of the batch is
// committed: the others run again, each alone.
func (s *Store) InBatch(ctx context.Context, fn func(*Tx) error) error {
	b := &batched{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.batches.mu.Lock()
	s.batches.waiting = append(s.batches.waiting, b)
	if s.batches.running < batchesAtOnce {
		s.batches.running++
		go s.runBatches()
	}
	s.batches.mu.Unlock()
	return <-b.done
}

// runBatches runs the waiting callers' batches until none wait.
func (s *Store) runBatches() {
	for {
		s.batches.mu.Lock()
		n := min(len(s.batches.waiting), batchMax)
		if n == 0 {
			s.batches.running--
			s.batches.mu.Unlock()
			return
		}
		batch := s.batches.waiting[:n:n]
		s.batches.waiting = s.batches.waiting[n:]
		s.batches.mu.Unlock()
		s.runBatch(batch)
	}
}

// runBatch commits batch, or tells each member why not: the member that
// failed gets its error, and the others, rolled back with it, each run
// again alone. So a member runs at most twice, however many fail: callers
// whose writes fail (a name taken) cannot make the others run again and
// again.
func (s *Store) runBatch(batch []*batched) {
	live := batch[:0]
	for _, b := range batch {
		if err := b.ctx.Err(); err != nil {
			b.done <- err
			continue
		}
		live = append(live, b)
	}
	if len(live) == 0 {
		return
	}
	ctx, done := whileAny(live)
	err := s.InTx(ctx, func(t *Tx) error {
		for i, b := range live {
			if err := runMember(b, t); err != nil {
				return memberFailed{i, err}
			}
		}
		return nil
	})
	done()
	var failed memberFailed
	if !errors.As(err, &failed) || errors.Is(err, ErrUnavailable) {
		for _, b := range live {
			b.done <- err
		}
		return
	}
	for i, b := range live {
		if i == failed.i {
			b.done <- failed.err
			continue
		}
		b.done <- s.InTx(b.ctx, func(t *Tx) error { return runMember(b, t) })
	}
}

// whileAny is a context for a batch's transaction that ends when every
// member's has: each member's statements run under its own, and the
// transaction is no one caller's to end for the rest. done releases it.
func whileAny(members []*batched) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(members[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(members)))
	stops := make([]func() bool, len(members))
	for i, b := range members {
		stops[i] = context.AfterFunc(b.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// runMember runs b's fn in t; a panic is b's error, as the caller's own
// goroutine would have reported it, not the process's end.
func runMember(b *batched, t *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in a batched transaction: %v\n%s", r, debug.Stack())
		}
	}()
	return b.fn(t)
}
