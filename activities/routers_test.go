package activities

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestOneServiceWritesOnlyItsOwnRows: a pass of one service on a router
// holding many others leaves their rows and the base document alone, and
// ends where a rebuild of the whole router would.
func TestOneServiceWritesOnlyItsOwnRows(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			ctx := context.Background()
			var others []string
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				for i := range 30 {
					name := fmt.Sprintf("other-%02d", i)
					others = append(others, name)
					err := tx.InsertService(ctx, &service.Service{
						Spec: service.Spec{Name: name, Type: service.TypeExternal, Resource: "203.0.113.11", TargetPort: 80,
							DefaultBridge: service.DefaultBridge, Tags: []string{}},
						BridgePort: 10100 + i,
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
			for _, name := range others {
				if _, err := f.env.ExecuteActivity(f.acts.PlanService, name); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.acts.reconcileRouter(ctx, f.hub.UUID, ""); err != nil {
				t.Fatal(err)
			}
			type row struct {
				Kind, Service, Object string
				WrittenAt             time.Time
			}
			snapshot := func() (string, map[string]row) {
				var base string
				rows := map[string]row{}
				f.tx(func(ctx context.Context, tx *store.Tx) error {
					b, err := tx.RouterConfig(ctx, f.hub.UUID)
					base = string(b)
					if err != nil {
						return err
					}
					entries, err := tx.AgentEntries(ctx, f.hub.UUID)
					if err != nil {
						return err
					}
					held, err := tx.RouterObjects(ctx, f.hub.UUID, "")
					for i, h := range held {
						rows[h.Kind+"/"+h.Service] = row{h.Kind, h.Service, string(h.JSON), entries[i].WrittenAt}
					}
					return err
				})
				return base, rows
			}
			base, before := snapshot()
			if len(before) != 2*len(others) {
				t.Fatalf("hub holds %d objects, want a listener and a connector of each of %d services", len(before), len(others))
			}

			p := f.plan()
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			baseAfter, after := snapshot()
			if baseAfter != base {
				t.Errorf("the base document was rewritten:\n%s\n%s", base, baseAfter)
			}
			for k, r := range before {
				if after[k] != r {
					t.Errorf("%s changed: %+v -> %+v", k, r, after[k])
				}
			}
			for _, k := range []string{"listener/web", "connector/web"} {
				if after[k].Object == "" {
					t.Errorf("%s not written: %v", k, after[k])
				}
			}
			// A rebuild of the whole router has nothing left to do.
			if res, err := f.acts.reconcileRouter(ctx, f.hub.UUID, ""); err != nil || res.Changes != nil {
				t.Errorf("rebuild after the pass: %v %v", res.Changes, err)
			}
		})
	}
}

// TestObjectsMoveOutOfADocumentFromBeforeRows: a router document written
// before objects were rows (svcbridge's objects inside it, entries without
// objects) is served the same, and the first rebuild moves the objects
// into rows: same document, entries keep their written-at times. A pass
// of the one service does it too, taking the whole router to rewrite the
// base.
func TestObjectsMoveOutOfADocumentFromBeforeRows(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for pass, only := range map[string]string{"whole router": "", "one service": "web"} {
			t.Run(dialect+"/"+pass, func(t *testing.T) {
				f := newFixture(t, dialect)
				ctx := context.Background()
				f.plan()
				legacy := `{"bridges":{"tcpConnectors":{"web-connector":{"name":"web-connector","host":"203.0.113.10","port":"443","address":"web","processId":"203.0.113.10-external-443"}},` +
					`"tcpListeners":{"web-listener":{"name":"web-listener","port":"10024","address":"web"}}},"x":1}`
				var entries []store.Entry
				f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
					if err := tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Base: []byte(legacy)}); err != nil {
						return err
					}
					held := []routerconfig.Held{{Kind: store.KindListener, Service: "web"}, {Kind: store.KindConnector, Service: "web"}}
					if err := tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Write: held, Rewritten: map[string]bool{"listener/web": true, "connector/web": true}}); err != nil {
						return err
					}
					entries, err = tx.AgentEntries(ctx, f.hub.UUID)
					return err
				})
				doc := func() string {
					var out []byte
					f.tx(func(ctx context.Context, tx *store.Tx) error {
						base, err := tx.RouterConfig(ctx, f.hub.UUID)
						if err != nil {
							return err
						}
						held, err := tx.RouterObjects(ctx, f.hub.UUID, "")
						if err != nil {
							return err
						}
						out, err = routerconfig.Assemble(base, held)
						return err
					})
					return string(out)
				}
				if got := doc(); got != legacy {
					t.Fatalf("served before the move:\n%s\nwant\n%s", got, legacy)
				}
				res, err := f.acts.reconcileRouter(ctx, f.hub.UUID, only)
				if err != nil {
					t.Fatal(err)
				}
				// A whole-router pass (the one service's takes the whole
				// router here) also gives the router its site.
				withSite := func(doc string) string {
					out, _, err := routerconfig.WithSite([]byte(doc), service.PlanSite(f.hub, nil, &f.hub))
					if err != nil {
						t.Fatal(err)
					}
					return string(out)
				}
				if got, want := doc(), withSite(legacy); got != want {
					t.Errorf("served after the move:\n%s\nwant\n%s", got, want)
				}
				f.tx(func(ctx context.Context, tx *store.Tx) error {
					base, err := tx.RouterConfig(ctx, f.hub.UUID)
					if string(base) != withSite(`{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"x":1}`) {
						t.Errorf("base after the move %s (changes %v)", base, res.Changes)
					}
					if err != nil {
						return err
					}
					after, err := tx.AgentEntries(ctx, f.hub.UUID)
					if !slices.EqualFunc(after, entries, func(a, b store.Entry) bool {
						return a.Kind == b.Kind && a.Service == b.Service && a.WrittenAt.Equal(b.WrittenAt)
					}) {
						t.Errorf("entries after the move %+v, want %+v", after, entries)
					}
					return err
				})
			})
		}
	}
}

// TestPassesOfDifferentServicesRunAtOnce: on PostgreSQL a pass over one
// service's objects on the hub does not wait for another service's pass
// still in its transaction (a burst of creates does not queue on the hub);
// a whole-router pass, and a pass of that same service, wait for it. On
// SQLite every writer waits for the one before it, so there is nothing to
// show there.
func TestPassesOfDifferentServicesRunAtOnce(t *testing.T) {
	f := newFixture(t, store.Postgres)
	ctx := context.Background()
	f.tx(func(ctx context.Context, tx *store.Tx) error {
		return tx.InsertService(ctx, &service.Service{
			Spec: service.Spec{Name: "other", Type: service.TypeExternal, Resource: "203.0.113.11", TargetPort: 80,
				DefaultBridge: service.DefaultBridge, Tags: []string{}},
			BridgePort: 10025,
		})
	})
	for _, name := range []string{"web", "other"} {
		if _, err := f.env.ExecuteActivity(f.acts.PlanService, name); err != nil {
			t.Fatal(err)
		}
	}
	// A pass of "other" on the hub, stopped inside its transaction.
	inPass, release, ended := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		ended <- f.st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.ShareRouter(ctx, f.hub.UUID, "other"); err != nil {
				return err
			}
			close(inPass)
			<-release
			return nil
		})
	}()
	<-inPass

	webCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := f.acts.reconcileRouter(webCtx, f.hub.UUID, "web"); err != nil {
		close(release)
		t.Fatalf("web's pass while other's is open: %v", err)
	}
	held := func(service string) int {
		var n int
		f.tx(func(ctx context.Context, tx *store.Tx) error {
			objs, err := tx.RouterObjects(ctx, f.hub.UUID, service)
			n = len(objs)
			return err
		})
		return n
	}
	if n := held("web"); n != 2 {
		t.Errorf("after web's pass the hub holds %d objects of web, want its listener and connector", n)
	}

	waiting := map[string]chan error{}
	for pass, only := range map[string]string{"whole router": "", "other's again": "other"} {
		ch := make(chan error, 1)
		waiting[pass] = ch
		go func() {
			_, err := f.acts.reconcileRouter(ctx, f.hub.UUID, only)
			ch <- err
		}()
	}
	time.Sleep(500 * time.Millisecond)
	for pass, ch := range waiting {
		select {
		case err := <-ch:
			t.Errorf("the %s pass ended (%v) while other's pass was open", pass, err)
		default:
		}
	}
	close(release)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	for pass, ch := range waiting {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("the %s pass: %v", pass, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the %s pass still waits after other's pass ended", pass)
		}
	}
	if n := held("other"); n != 2 {
		t.Errorf("the hub holds %d objects of other, want its listener and connector", n)
	}
}
