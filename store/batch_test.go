package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// batchFixture is a store with a hub, and callers of InBatch that each
// write a listener of their own on the hub.
type batchFixture struct {
	s       *store.Store
	release chan struct{}
	open    func() // closes release, once
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    map[string]error
}

func newBatchFixture(t *testing.T, dialect string) *batchFixture {
	f := &batchFixture{s: storetest.Open(t, dialect), release: make(chan struct{}), errs: map[string]error{}}
	mustTx(t, f.s, func(ctx context.Context, tx *store.Tx) error {
		return tx.CreateAgent(ctx, agent("h-1", "hub", inventory.RouterInterior, true), "h")
	})
	f.open = sync.OnceFunc(func() { close(f.release) })
	t.Cleanup(f.wg.Wait)
	t.Cleanup(f.open) // first: a test that failed early leaves none waiting
	return f
}

// write has the caller svc write its listener on the hub in a batch, then
// do then (nil: nothing).
func (f *batchFixture) write(ctx context.Context, svc string, then func() error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		err := f.s.InBatch(ctx, func(tx *store.Tx) error {
			err := tx.WriteRouter(ctx, "h-1", store.RouterWrite{
				Write:     []routerconfig.Held{{Kind: store.KindListener, Service: svc, JSON: []byte(`{}`)}},
				Rewritten: map[string]bool{store.KindListener + "/" + svc: true}, Changed: true})
			if err != nil || then == nil {
				return err
			}
			return then()
		})
		f.mu.Lock()
		f.errs[svc] = err
		f.mu.Unlock()
	}()
}

// occupy fills both of the store's batch lanes with callers that wait for
// f.release, so that the callers after them wait to run together.
func (f *batchFixture) occupy(t *testing.T) {
	for i, svc := range []string{"lane-1", "lane-2"} {
		f.write(context.Background(), svc, func() error { <-f.release; return nil })
		// One at a time: two callers that come together share a batch.
		f.until(t, func(running, waiting int) bool { return running == i+1 && waiting == 0 })
	}
}

// until waits for the store's batches to be as ok says.
func (f *batchFixture) until(t *testing.T, ok func(running, waiting int) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		running, waiting := store.Batches(f.s)
		if ok(running, waiting) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("batches: %d running, %d waiting", running, waiting)
		}
	}
}

// hub is what the hub holds: its listeners by service, and its version.
func (f *batchFixture) hub(t *testing.T) (listeners map[string]store.ListenerEntry, version int64) {
	t.Helper()
	listeners = map[string]store.ListenerEntry{}
	mustTx(t, f.s, func(ctx context.Context, tx *store.Tx) error {
		es, err := tx.AgentListeners(ctx, "h-1")
		for _, e := range es {
			listeners[e.Service] = e
		}
		if err != nil {
			return err
		}
		return tx.Get(ctx, &version, `SELECT version FROM router_configs WHERE agent_uuid = ?`, "h-1")
	})
	return listeners, version
}

// Callers that come while others' transactions run commit together: 30
// passes' listeners on the hub are all stored and numbered, the hub's
// version moving once for each of the two batches they made, where it
// moved once per caller.
func TestWritesThatComeTogetherCommitTogether(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		f := newBatchFixture(t, dialect)
		_, before := f.hub(t)
		f.occupy(t)
		var want []string
		for i := range 30 {
			svc := fmt.Sprintf("svc-%02d", i)
			want = append(want, svc)
			f.write(context.Background(), svc, nil)
		}
		f.until(t, func(_, waiting int) bool { return waiting == 30 })
		f.open()
		f.wg.Wait()
		for svc, err := range f.errs {
			if err != nil {
				t.Errorf("%s: %v", svc, err)
			}
		}
		listeners, after := f.hub(t)
		if got := after - before; got != 4 {
			t.Errorf("the hub's version moved %d times for 32 writers in two lanes, want 4 (each lane's first caller, then a batch each)", got)
		}
		seqs := map[int64][]string{}
		for _, svc := range append(want, "lane-1", "lane-2") {
			e, ok := listeners[svc]
			if !ok || e.ChangeSeq == 0 {
				t.Errorf("%s: listener %+v (held %v), want it stored and numbered", svc, e, ok)
			}
			seqs[e.ChangeSeq] = append(seqs[e.ChangeSeq], svc)
		}
		if len(seqs) != 4 {
			t.Errorf("listeners numbered by %d changes, want 4: %v", len(seqs), seqs)
		}
	})
}

// A caller whose work fails, panics or is cancelled gets its error and
// leaves nothing; the callers batched with it commit all they wrote, each
// having run at most twice however many failed beside it.
func TestABatchedCallerThatFailsLeavesTheOthersWhole(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		f := newBatchFixture(t, dialect)
		f.occupy(t)
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		refused := errors.New("refused")
		ctx := context.Background()
		var mu sync.Mutex
		runs := map[string]int{}
		ok := func(svc string) {
			f.write(ctx, svc, func() error {
				mu.Lock()
				defer mu.Unlock()
				runs[svc]++
				return nil
			})
		}
		ok("ok-1")
		f.write(ctx, "fails", func() error { return refused })
		ok("ok-2")
		f.write(ctx, "panics", func() error { panic("the pass broke") })
		f.write(cancelled, "cancelled", nil)
		ok("ok-3")
		for i := range 5 {
			f.write(ctx, fmt.Sprintf("fails-%d", i), func() error { return refused })
		}
		f.until(t, func(_, waiting int) bool { return waiting == 11 })
		f.open()
		f.wg.Wait()
		for svc, n := range runs {
			if n > 2 {
				t.Errorf("%s ran %d times", svc, n)
			}
		}

		for svc, want := range map[string]string{"fails": "refused", "panics": "panic in a batched transaction: the pass broke", "cancelled": "context canceled"} {
			if err := f.errs[svc]; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %v, want %q", svc, err, want)
			}
		}
		if !errors.Is(f.errs["fails"], refused) {
			t.Errorf("fails: %v is not its own error", f.errs["fails"])
		}
		listeners, _ := f.hub(t)
		var held []string
		for svc := range listeners {
			held = append(held, svc)
		}
		slices.Sort(held)
		if want := []string{"lane-1", "lane-2", "ok-1", "ok-2", "ok-3"}; !slices.Equal(held, want) {
			t.Errorf("the hub holds listeners of %v, want %v", held, want)
		}
		for _, svc := range []string{"ok-1", "ok-2", "ok-3"} {
			if err := f.errs[svc]; err != nil {
				t.Errorf("%s: %v", svc, err)
			}
		}
	})
}
