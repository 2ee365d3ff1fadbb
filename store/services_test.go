package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

func TestAllocateBridgePort(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		ports := store.PortRange{First: 20000, Last: 20002}
		alloc := func(name string) (int, error) {
			var port int
			err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				var err error
				if port, err = tx.AllocateBridgePort(ctx, ports); err != nil {
					return err
				}
				return tx.InsertService(ctx, externalService(name, port))
			})
			return port, err
		}
		for i, want := range []int{20000, 20001, 20002} {
			if got, err := alloc(fmt.Sprintf("svc-%d", i)); err != nil || got != want {
				t.Fatalf("allocation %d = %d, %v; want %d", i, got, err, want)
			}
		}
		if _, err := alloc("svc-full"); !errors.Is(err, store.ErrNoBridgePort) {
			t.Fatalf("full range: err = %v, want ErrNoBridgePort", err)
		}
		// A freed port is reused, the lowest first, including the first.
		for _, name := range []string{"svc-1", "svc-0"} {
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DeleteService(ctx, name, false) })
		}
		for _, want := range []int{20000, 20001} {
			if got, err := alloc(fmt.Sprintf("svc-again-%d", want)); err != nil || got != want {
				t.Fatalf("reallocation = %d, %v; want %d", got, err, want)
			}
		}
		// Ports outside the range do not block it.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertService(ctx, externalService("outside", 19999))
		})
		// A range that starts lower is searched from its start, not from
		// where the last range's search stopped.
		ports = store.PortRange{First: 19998, Last: 20002}
		if got, err := alloc("svc-lower"); err != nil || got != 19998 {
			t.Fatalf("allocation in a lower range = %d, %v; want 19998", got, err)
		}
		if _, err := alloc("svc-lower-full"); !errors.Is(err, store.ErrNoBridgePort) {
			t.Fatalf("full lower range: err = %v, want ErrNoBridgePort", err)
		}
		// The unique index is what makes a port unique.
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertService(ctx, externalService("clash", 20000))
		})
		if !store.IsConflict(err, store.ServiceBridgePortKey) {
			t.Fatalf("duplicate port: err = %v, want a conflict on %s", err, store.ServiceBridgePortKey)
		}
	})
}

// TestAllocateBridgePortPastTheFloor: the stored floor trails the first
// free port by up to a few dozen ports (a create raises it only that far
// behind): many creates still take the ports in order, and a port freed
// below the floor or above it is the next one handed out.
func TestAllocateBridgePortPastTheFloor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		ports := store.PortRange{First: 20000, Last: 20999}
		alloc := func(name string) int {
			t.Helper()
			var port int
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				var err error
				if port, err = tx.AllocateBridgePort(ctx, ports); err != nil {
					return err
				}
				return tx.InsertService(ctx, externalService(name, port))
			})
			return port
		}
		for i := range 150 {
			if got := alloc(fmt.Sprintf("svc-%03d", i)); got != 20000+i {
				t.Fatalf("allocation %d = %d, want %d", i, got, 20000+i)
			}
		}
		// 20005 is far below the floor by now, 20140 likely above it.
		for _, name := range []string{"svc-005", "svc-140"} {
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DeleteService(ctx, name, false) })
		}
		for _, want := range []int{20005, 20140, 20150} {
			if got := alloc(fmt.Sprintf("again-%d", want)); got != want {
				t.Fatalf("allocation = %d, want %d", got, want)
			}
		}
	})
}

// TestAllocateBridgePortConcurrently: 50 transactions allocating at once
// get 50 distinct ports and none fails, on SQLite too.
func TestAllocateBridgePortConcurrently(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		const n = 50
		ports := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.InTx(context.Background(), func(tx *store.Tx) error {
					ctx := context.Background()
					port, err := tx.AllocateBridgePort(ctx, store.PortRange{First: 10024, Last: 65535})
					if err != nil {
						return err
					}
					ports[i] = port
					return tx.InsertService(ctx, externalService(fmt.Sprintf("svc-%02d", i), port))
				})
			})
		}
		close(start)
		wg.Wait()
		seen := map[int]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("goroutine %d: %v", i, errs[i])
			}
			if seen[ports[i]] {
				t.Fatalf("port %d allocated twice", ports[i])
			}
			seen[ports[i]] = true
		}
		var stored []service.Service
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			var err error
			stored, err = tx.ListServices(ctx)
			return err
		})
		got := make([]int, 0, len(stored))
		for _, svc := range stored {
			got = append(got, svc.BridgePort)
		}
		slices.Sort(got)
		// First free port each time: together they fill the range's start.
		for i, p := range got {
			if p != 10024+i {
				t.Fatalf("stored ports = %v, want 10024..%d", got, 10024+n-1)
			}
		}
		if len(got) != n {
			t.Fatalf("%d services stored, want %d", len(got), n)
		}
	})
}

// TestBridgePortAllocationsDoNotQueue: on PostgreSQL a create whose
// transaction is still open does not hold up the next one, which takes the
// next port at once; the first port, rolled back, is free again, and a
// port freed while a create holds the floor is found after it commits.
func TestBridgePortAllocationsDoNotQueue(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	ports := store.PortRange{First: 20000, Last: 20009}
	errRollback := errors.New("rolled back")
	// alloc allocates and inserts name in one transaction; hold, when
	// set, runs before it ends and says how (errRollback: rolled back).
	alloc := func(ctx context.Context, name string, hold func(port int) error) (int, error) {
		var port int
		err := s.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if port, err = tx.AllocateBridgePort(ctx, ports); err != nil {
				return err
			}
			if err := tx.InsertService(ctx, externalService(name, port)); err != nil || hold == nil {
				return err
			}
			return hold(port)
		})
		return port, err
	}
	// holdOpen allocates for name in a transaction left open until end,
	// which ends it (committed, or rolled back with rollback) and waits.
	holdOpen := func(name string, rollback bool) (port int, end func() error) {
		held, release, done := make(chan int), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := alloc(context.Background(), name, func(port int) error {
				held <- port
				<-release
				if rollback {
					return errRollback
				}
				return nil
			})
			done <- err
		}()
		select {
		case port = <-held:
		case err := <-done:
			t.Fatalf("allocation for %s: %v", name, err)
		}
		return port, func() error { close(release); return <-done }
	}
	// quick allocates within a deadline: one queued behind an open
	// transaction would fail.
	quick := func(name string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		port, err := alloc(ctx, name, nil)
		if err != nil {
			t.Fatalf("allocation for %s beside an open one: %v", name, err)
		}
		return port
	}

	first, end := holdOpen("rolled-back", true)
	if got := quick("beside"); first != 20000 || got != 20001 {
		t.Fatalf("allocations = %d, then %d beside it; want 20000, 20001", first, got)
	}
	if err := end(); !errors.Is(err, errRollback) {
		t.Fatalf("ending the open transaction: %v", err)
	}
	if got := quick("again"); got != 20000 {
		t.Fatalf("allocation after a rollback = %d, want its port 20000", got)
	}

	// A delete lowers the floor after the create holding it commits.
	held, end := holdOpen("holding", false)
	deleted := make(chan error, 1)
	go func() {
		deleted <- inTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DeleteService(ctx, "beside", false) })
	}()
	select {
	case err := <-deleted:
		t.Fatalf("the delete did not wait for the create holding the floor: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if got := quick("freed"); held != 20002 || got != 20001 {
		t.Fatalf("allocations = %d, then %d after 20001 was freed; want 20002, 20001", held, got)
	}
}

// TestDeletesDoNotQueue: on PostgreSQL a delete whose transaction is still
// open does not hold up another, and the ports both freed are found again,
// the lowest first.
func TestDeletesDoNotQueue(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	ports := store.PortRange{First: 20000, Last: 20009}
	for i, name := range []string{"a", "b", "c"} {
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			port, err := tx.AllocateBridgePort(ctx, ports)
			if err != nil || port != 20000+i {
				return fmt.Errorf("port %d for %s: %v", port, name, err)
			}
			return tx.InsertService(ctx, externalService(name, port))
		})
	}
	deleting, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(context.Background(), func(tx *store.Tx) error {
			if err := tx.DeleteService(context.Background(), "a", false); err != nil {
				return err
			}
			close(deleting)
			<-release
			return nil
		})
	}()
	<-deleting
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.InTx(ctx, func(tx *store.Tx) error { return tx.DeleteService(ctx, "b", false) }); err != nil {
		t.Fatalf("a delete beside an open one: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{20000, 20001, 20003} {
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.AllocateBridgePort(ctx, ports); err != nil || got != want {
				return fmt.Errorf("allocation after the deletes = %d (%v), want %d", got, err, want)
			}
			return tx.InsertService(ctx, externalService(fmt.Sprint("after-", want), want))
		})
	}
}

// TestPlacementIsStoredForItsGeneration: a reconcile stores the placement
// it found unless the service was changed since it read it; that change's
// own reconcile places it then.
func TestPlacementIsStoredForItsGeneration(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		svc := externalService("web", 20000)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.InsertService(ctx, svc) })
		stored := func() service.Placement {
			var p service.Placement
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				got, err := tx.GetService(ctx, "web")
				p = got.Placement
				return err
			})
			return p
		}
		planned := service.Placement{ConnectorSite: "hub", HubSite: "hub", OnDefaultRouter: true}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.SetServicePlacement(ctx, "web", 1, planned)
		})
		if got := stored(); !got.SameSites(planned) {
			t.Fatalf("placement of generation 1: %+v, want %+v", got, planned)
		}
		// The API writes generation 2 with its placement; a reconcile that
		// read generation 1 comes late.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			svc.Placement = service.Placement{ConnectorSite: "fog", HubSite: "hub", BackendAgent: "fog"}
			return tx.UpdateService(ctx, svc)
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.SetServicePlacement(ctx, "web", 1, planned)
		})
		if got := stored(); !got.SameSites(svc.Placement) {
			t.Errorf("a reconcile of generation 1 overwrote generation 2's placement: %+v, want %+v", got, svc.Placement)
		}
	})
}

// TestDeletingUntilObjectsGone: a deleted service is deleting while a
// router still holds one of its objects (and, on Kubernetes, until its
// cluster objects are removed), on its own, whatever else is stored.
func TestDeletingUntilObjectsGone(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			for i, name := range []string{"on-router", "in-cluster", "kept"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
				if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener(name)}); err != nil {
					return err
				}
			}
			if err := tx.DeleteService(ctx, "on-router", false); err != nil {
				return err
			}
			if err := tx.DeleteService(ctx, "in-cluster", true); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Drop: listener("in-cluster")})
		})
		deleting := func() []string {
			var names []string
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
				names, err = tx.DeletingServicesAfter(ctx, "", 0)
				return err
			})
			return names
		}
		if got := deleting(); !slices.Equal(got, []string{"in-cluster", "on-router"}) {
			t.Fatalf("deleting %v, want in-cluster (its cluster objects) and on-router (its listener)", got)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.ClearDeletion(ctx, "in-cluster"); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Drop: listener("on-router")})
		})
		if got := deleting(); len(got) != 0 {
			t.Fatalf("deleting %v after the objects went, want none", got)
		}
		// Made again under the same name: not deleting, even once pruned.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.PruneDeletions(ctx); err != nil {
				return err
			}
			if err := tx.InsertService(ctx, externalService("on-router", 20010)); err != nil {
				return err
			}
			return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("on-router")})
		})
		if got := deleting(); len(got) != 0 {
			t.Fatalf("deleting %v with the service made again, want none", got)
		}
	})
}

// TestUnsettledAmong: of the names asked, those a reconcile has yet to
// finish: a generation not reconciled, or deleted with objects left; and
// whether an agent waits in the queue.
func TestUnsettledAmong(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			for i, name := range []string{"pending", "ready", "deleted"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
			}
			if _, err := tx.SetServiceStatus(ctx, "ready", store.PassResult{Generation: 1, Status: service.StatusReady}); err != nil {
				return err
			}
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("deleted")}); err != nil {
				return err
			}
			if err := tx.DeleteService(ctx, "deleted", false); err != nil {
				return err
			}
			return tx.QueueAgents(ctx, []string{"a-1"})
		})
		// The resync leaves a deletion to the delete's signal for a grace
		// period too: a burst of deletes is not signalled again while
		// their workflows work through it.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(-time.Minute)); err != nil || slices.Contains(got, "deleted") {
				t.Errorf("resync within the grace: %v (%v), want no deleted", got, err)
			}
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(time.Minute)); err != nil || !slices.Contains(got, "deleted") {
				t.Errorf("resync after the grace: %v (%v), want deleted among them", got, err)
			}
			return nil
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			got, err := tx.UnsettledAmong(ctx, []string{"pending", "ready", "deleted", "unknown"})
			slices.Sort(got)
			if want := []string{"deleted", "pending"}; !slices.Equal(got, want) {
				t.Errorf("unsettled %v, want %v", got, want)
			}
			if err != nil {
				return err
			}
			for agent, want := range map[string]bool{"a-1": true, "a-2": false} {
				if queued, err := tx.AgentQueued(ctx, agent); err != nil || queued != want {
					t.Errorf("agent %s queued %v (%v), want %v", agent, queued, err, want)
				}
			}
			return nil
		})
		// A reconcile requested by an inventory change unsettles a ready
		// service until a pass that read the request finishes; the resync
		// leaves it to the API's signal for a grace period.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.RequestReconcilesFor(ctx, []string{"ready", "unknown"}, "")
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.UnsettledAmong(ctx, []string{"ready"}); err != nil || !slices.Equal(got, []string{"ready"}) {
				t.Errorf("after a request: unsettled %v (%v), want [ready]", got, err)
			}
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(-time.Minute)); err != nil || slices.Contains(got, "ready") {
				t.Errorf("resync within the grace: %v (%v), want no ready", got, err)
			}
			if got, err := tx.UnsettledServices(ctx, time.Now().Add(time.Minute)); err != nil || !slices.Contains(got, "ready") {
				t.Errorf("resync after the grace: %v (%v), want ready among them", got, err)
			}
			_, err := tx.SetServiceStatus(ctx, "ready", store.PassResult{Generation: 1, Request: 1, Status: service.StatusReady})
			return err
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if got, err := tx.UnsettledAmong(ctx, []string{"ready"}); err != nil || len(got) != 0 {
				t.Errorf("after the pass that read the request: unsettled %v (%v), want none", got, err)
			}
			return nil
		})
	})
}

// TestAllocatedPortCommittedMeanwhileRetries: on PostgreSQL a port found
// free and claimed, which a create committed between the search and the
// claim, is found taken by the insert, and the transaction runs again on
// the next port: the create succeeds, no port is held twice. (SQLite runs
// one writer at a time: nothing commits meanwhile.)
func TestAllocatedPortCommittedMeanwhileRetries(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	ports := store.PortRange{First: 20000, Last: 20009}
	attempts, first := 0, 0
	var svc *service.Service
	err := s.InTx(context.Background(), func(tx *store.Tx) error {
		ctx := context.Background()
		attempts++
		port, err := tx.AllocateBridgePort(ctx, ports)
		if err != nil {
			return err
		}
		if attempts == 1 {
			// What such a create leaves: the port committed after the
			// search read it free.
			first = port
			mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				return tx.InsertService(ctx, externalService("squatter", port))
			})
		}
		svc = externalService("web", port)
		return tx.InsertService(ctx, svc)
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if attempts != 2 || svc.BridgePort == first {
		t.Errorf("%d attempts, port %d then %d; want a second attempt on another port", attempts, first, svc.BridgePort)
	}
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		for name, want := range map[string]int{"squatter": first, "web": svc.BridgePort} {
			got, err := tx.GetService(ctx, name)
			if err != nil || got.BridgePort != want {
				t.Errorf("%s: port %d (%v), want %d", name, got.BridgePort, err, want)
			}
		}
		return nil
	})
}
