package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// forEachDialect runs f as a parallel subtest per dialect.
func forEachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// url returns a fresh database of the dialect for tests that open it
// themselves.
func url(t *testing.T, dialect string) string {
	if dialect == store.Postgres {
		return storetest.NewPostgresDB(t)
	}
	return filepath.Join(t.TempDir(), "svcbridge.db")
}

func inTx(t *testing.T, s *store.Store, fn func(ctx context.Context, tx *store.Tx) error) error {
	t.Helper()
	ctx := context.Background()
	return s.InTx(ctx, func(tx *store.Tx) error { return fn(ctx, tx) })
}

func mustTx(t *testing.T, s *store.Store, fn func(ctx context.Context, tx *store.Tx) error) {
	t.Helper()
	if err := inTx(t, s, fn); err != nil {
		t.Fatal(err)
	}
}

func agent(id, name, mode string, defaultRouter bool) *inventory.Agent {
	return &inventory.Agent{UUID: id, Name: name, RouterMode: mode, DefaultRouter: defaultRouter,
		Tags: []string{}, UpstreamRouters: []string{}}
}

func externalService(name string, port int) *service.Service {
	return &service.Service{
		Spec: service.Spec{Name: name, Type: service.TypeExternal, Resource: "203.0.113.10",
			TargetPort: 443, DefaultBridge: "default-router", Tags: []string{}},
		BridgePort: port,
	}
}

// TestMigrationsIdempotent opens the same database twice: the second Open
// re-runs Migrate, which must be a no-op that keeps the data.
func TestMigrationsIdempotent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		u := url(t, dialect)
		s1, err := store.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		mustTx(t, s1, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "hash-1")
		})
		if err := s1.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate on an open store: %v", err)
		}
		s1.Close()

		s2, err := store.Open(ctx, u)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer s2.Close()
		mustTx(t, s2, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.GetAgent(ctx, "hub")
			if err != nil {
				return err
			}
			if a.UUID != "a-1" || !a.DefaultRouter {
				return fmt.Errorf("agent after reopen = %+v", a)
			}
			return nil
		})
	})
}

// TestOneDefaultRouter: the partial unique index, not the handlers' check,
// is what finally keeps a second default router out.
func TestOneDefaultRouter(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "h1"); err != nil {
				return err
			}
			// Many agents that are not the default router are fine.
			if err := tx.CreateAgent(ctx, agent("a-2", "core", inventory.RouterInterior, false), "h2"); err != nil {
				return err
			}
			return tx.CreateAgent(ctx, agent("a-3", "core-2", inventory.RouterInterior, false), "h3")
		})
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-4", "hub-2", inventory.RouterInterior, true), "h4")
		})
		if !store.IsConflict(err, store.AgentDefaultRouterKey) {
			t.Fatalf("second default router by insert: err = %v, want a conflict on %s", err, store.AgentDefaultRouterKey)
		}
		err = inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.GetAgent(ctx, "core")
			if err != nil {
				return err
			}
			a.DefaultRouter = true
			return tx.UpdateAgent(ctx, &a)
		})
		if !store.IsConflict(err, store.AgentDefaultRouterKey) {
			t.Fatalf("second default router by update: err = %v, want a conflict on %s", err, store.AgentDefaultRouterKey)
		}
		// Moving the role in one transaction works.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for _, step := range []struct {
				name string
				def  bool
			}{{"hub", false}, {"core", true}} {
				a, err := tx.GetAgent(ctx, step.name)
				if err != nil {
					return err
				}
				a.DefaultRouter = step.def
				if err := tx.UpdateAgent(ctx, &a); err != nil {
					return err
				}
			}
			d, err := tx.DefaultRouter(ctx)
			if err == nil && d.Name != "core" {
				err = fmt.Errorf("default router = %s, want core", d.Name)
			}
			return err
		})
	})
}

// TestAgentRows covers what the handlers rely on: duplicate names as a
// named conflict, a router config and a raised flag for routers, lookup by
// token hash, and the references that block a delete.
func TestAgentRows(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "h1"); err != nil {
				return err
			}
			edge := agent("a-2", "plant-a", inventory.RouterEdge, false)
			edge.Tags = []string{"b", "a"}
			edge.UpstreamRouters = []string{"a-1"}
			if err := tx.CreateAgent(ctx, edge, "h2"); err != nil {
				return err
			}
			return tx.CreateAgent(ctx, agent("a-3", "sensor", inventory.RouterNone, false), "h3")
		})
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-9", "plant-a", inventory.RouterEdge, false), "h9")
		})
		if !store.IsConflict(err, store.AgentNameKey) {
			t.Fatalf("duplicate name: err = %v, want a conflict on %s", err, store.AgentNameKey)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.AgentByTokenHash(ctx, "h2")
			if err != nil || a.Name != "plant-a" {
				return fmt.Errorf("AgentByTokenHash = %+v, %v", a, err)
			}
			if _, err := tx.AgentByTokenHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("unknown hash: err = %v", err)
			}
			a, err = tx.GetAgent(ctx, "a-2")
			if err != nil || !slices.Equal(a.Tags, []string{"b", "a"}) || !slices.Equal(a.UpstreamRouters, []string{"a-1"}) {
				return fmt.Errorf("GetAgent by uuid = %+v, %v (tags keep their order)", a, err)
			}
			// A new router's config: no bridges, and its site (its
			// uplink to its upstream router, dialled by name without a host).
			cfg, err := tx.RouterConfig(ctx, "a-2")
			want, _, _ := routerconfig.WithSite([]byte(routerconfig.Empty), routerconfig.Site{ID: "a-2", Mode: routerconfig.ModeEdge,
				Links: []routerconfig.Link{{Name: "a-1", Host: "hub", Port: routerconfig.EdgePort, Role: routerconfig.RoleEdge}}})
			if err != nil || string(cfg) != string(want) {
				return fmt.Errorf("router config = %s, %v; want %s", cfg, err, want)
			}
			if ch, err := tx.AgentChanges(ctx, "a-2"); err != nil || !ch.MicroserviceConfig {
				return fmt.Errorf("new router's changes = %+v, %v", ch, err)
			}
			if _, err := tx.RouterConfig(ctx, "a-3"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("routerMode none has a config: %v", err)
			}
			hub, err := tx.GetAgent(ctx, "hub")
			if err != nil {
				return err
			}
			refs, err := tx.AgentReferences(ctx, hub)
			if err != nil || !slices.Equal(refs, []string{"agents plant-a use it as upstream router"}) {
				return fmt.Errorf("hub references = %q, %v", refs, err)
			}
			return nil
		})
		// The foreign key is the last line: a referenced agent cannot go.
		err = inTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DeleteAgent(ctx, "a-1") })
		if !store.IsConflict(err, store.ForeignKey) {
			t.Fatalf("delete of a referenced agent: err = %v, want a foreign key conflict", err)
		}
	})
}

func TestChangeFlags(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		var first, second store.Changes
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "h"); err != nil {
				return err
			}
			var err error
			first, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		// Two writes within the same millisecond still order.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(routerconfig.Empty)}); err != nil {
				return err
			}
			var err error
			second, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		if second.LastUpdated <= first.LastUpdated {
			t.Fatalf("lastUpdated did not grow: %d then %d", first.LastUpdated, second.LastUpdated)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.AckChanges(ctx, "a-1", first.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || !ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the older change: %+v, %v", ch, err)
			}
			if err := tx.AckChanges(ctx, "a-1", second.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the current change: %+v, %v", ch, err)
			}
			if err := tx.WriteRouter(ctx, "nope", store.RouterWrite{Base: []byte(routerconfig.Empty)}); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("write to an agent without router: %v", err)
			}
			return nil
		})
	})
}

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

// TestDeadlockedTransactionsAreRetried makes two transactions lock two
// router configs in opposite orders; PostgreSQL aborts one to break the
// deadlock, and InTx runs it again, so both writes land.
func TestDeadlockedTransactionsAreRetried(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		if err := tx.CreateAgent(ctx, agent("a1", "one", "edge", false), "h1"); err != nil {
			return err
		}
		return tx.CreateAgent(ctx, agent("a2", "two", "edge", false), "h2")
	})
	var wg sync.WaitGroup
	locked := make(chan struct{}, 2)
	proceed := make(chan struct{})
	write := func(first, second, doc string) error {
		attempt := 0
		return inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			attempt++
			if err := tx.WriteRouter(ctx, first, store.RouterWrite{Base: []byte(doc)}); err != nil {
				return err
			}
			if attempt == 1 { // both hold their first lock before either takes its second
				locked <- struct{}{}
				<-proceed
			}
			return tx.WriteRouter(ctx, second, store.RouterWrite{Base: []byte(doc)})
		})
	}
	errs := make([]error, 2)
	for i, order := range [][2]string{{"a1", "a2"}, {"a2", "a1"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(order[0], order[1], fmt.Sprintf(`{"writer":%d}`, i))
		}()
	}
	<-locked
	<-locked
	close(proceed)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	// Both routers end with the same writer's document: one transaction
	// ran entirely after the other.
	var c1, c2 []byte
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
		if c1, err = tx.RouterConfig(ctx, "a1"); err == nil {
			c2, err = tx.RouterConfig(ctx, "a2")
		}
		return err
	})
	if string(c1) != string(c2) {
		t.Errorf("router configs %s and %s: the transactions interleaved", c1, c2)
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
