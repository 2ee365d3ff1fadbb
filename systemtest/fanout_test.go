package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"svcbridge/activities"
	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/worker"
	"svcbridge/workflows"
)

// hangingSignaler passes its first call to next, then hangs on every
// later one, deaf to its context, as a worker that died mid-activity never
// answers; stuck is closed when a call hangs.
type hangingSignaler struct {
	next    activities.Signaler
	once    sync.Once
	mu      sync.Mutex
	calls   int
	stuck   chan struct{}
	release chan struct{}
}

func (h *hangingSignaler) AgentsChanged(ctx context.Context, uuids ...string) error {
	h.mu.Lock()
	h.calls++
	first := h.calls == 1
	h.mu.Unlock()
	if first {
		return h.next.AgentsChanged(ctx, uuids...)
	}
	h.once.Do(func() { close(h.stuck) })
	<-h.release
	return context.Canceled
}

// countingSignaler counts the agents it queues through next.
type countingSignaler struct {
	next   activities.Signaler
	mu     sync.Mutex
	queued int
}

func (c *countingSignaler) AgentsChanged(ctx context.Context, uuids ...string) error {
	c.mu.Lock()
	c.queued += len(uuids)
	c.mu.Unlock()
	return c.next.AgentsChanged(ctx, uuids...)
}

// TestFanoutOfADeadWorkerResumesElsewhere: a worker stops answering in the
// middle of a service's fan-out to 600 tagged agents (it queued the first
// chunk); another worker takes the fan-out over once its heartbeat is
// missed, well before its StartToCloseTimeout (2 minutes, longer than this
// test waits), queues only the agents the first had not, and every agent's
// router gets the service's listener.
func TestFanoutOfADeadWorkerResumesElsewhere(t *testing.T) {
	s := newSystem(t, store.SQLite, 0)
	hub := s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	// More agents than one chunk of the fan-out (500), stored at once: the
	// API would take a while to create them.
	const n = 600
	ctx := context.Background()
	uuids := make([]string, n)
	if err := s.store.InTx(ctx, func(tx *store.Tx) error {
		for i := range uuids {
			a := inventory.NewAgent(uuid.NewString())
			a.Name, a.Tags, a.UpstreamRouters = fmt.Sprintf("edge-%03d", i), []string{"service.iofog.org/tag: wide"}, []string{hub.UUID}
			uuids[i] = a.UUID
			if err := tx.CreateAgent(ctx, &a, "hash-"+a.UUID); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	activitiesWith := func(sig activities.Signaler) *activities.Activities {
		return &activities.Activities{Store: s.store, Tags: s.tags, ControlPlane: s.plane, Signaler: sig}
	}
	trigger := s.installation().Trigger(s.temporal, s.store)

	hanging := &hangingSignaler{next: trigger, stuck: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(hanging.release) })
	w1 := worker.New(s.temporal, s.queue, activitiesWith(hanging), workflows.Timing{}, nil)
	if err := w1.Start(); err != nil {
		t.Fatal(err)
	}
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{"name": "wide", "type": "external",
		"resource": "203.0.113.10", "targetPort": 443, "tags": []string{"wide"}}, nil)
	select {
	case <-hanging.stuck:
	case <-time.After(time.Minute):
		t.Fatal("the fan-out never reached its second chunk")
	}
	// The first chunk's agents are reconciled before the worker goes, so
	// that only the fan-out is left to take over.
	s.waitFor("the first chunk reconciled", time.Minute, func() (bool, string) {
		var queued int
		err := s.store.Read(ctx, func(tx *store.Tx) (err error) { queued, err = tx.QueuedAgentCount(ctx); return err })
		return err == nil && queued == 0, fmt.Sprintf("%d agents queued (%v)", queued, err)
	})
	w1.Stop()

	counting := &countingSignaler{next: trigger}
	w2 := worker.New(s.temporal, s.queue, activitiesWith(counting), workflows.Timing{}, nil)
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w2.Stop)
	s.waitFor("every agent's router to hold the listener", time.Minute, func() (bool, string) {
		missing := 0
		err := s.store.Read(ctx, func(tx *store.Tx) error {
			missing = 0
			for _, id := range uuids {
				held, err := tx.RouterObjects(ctx, id, "wide")
				if err != nil {
					return err
				}
				if len(held) == 0 {
					missing++
				}
			}
			return nil
		})
		return err == nil && missing == 0, fmt.Sprintf("%d of %d agents without the listener (%v)", missing, n, err)
	})
	counting.mu.Lock()
	defer counting.mu.Unlock()
	if counting.queued != n-500 {
		t.Errorf("the second worker queued %d agents, want the %d the first had not", counting.queued, n-500)
	}
}
