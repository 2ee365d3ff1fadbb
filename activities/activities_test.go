package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/testsuite"

	"svcbridge/inventory"
	"svcbridge/metrics"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/workflows/pass"
)

// recordingSignaler records the agents the activities queue.
type recordingSignaler struct{ agents []string }

func (r *recordingSignaler) AgentsChanged(_ context.Context, uuids ...string) error {
	r.agents = append(r.agents, uuids...)
	return nil
}

// fixture is a store with a hub, an edge agent tagged all and an
// external service, and the activities over it in the SDK's test
// activity environment.
type fixture struct {
	t    *testing.T
	st   *store.Store
	acts *Activities
	env  *testsuite.TestActivityEnvironment
	hub  inventory.Agent
	edge inventory.Agent
}

func newFixture(t *testing.T, dialect string) *fixture {
	st := storetest.Open(t, dialect)
	f := &fixture{t: t, st: st,
		acts: &Activities{Store: st, Tags: service.TagRule{Prefix: service.DefaultTagPrefix}, ControlPlane: service.ControlPlaneRemote},
		hub: inventory.Agent{UUID: "00000000-0000-0000-0000-00000000000a", Name: "hub", RouterMode: inventory.RouterInterior,
			DefaultRouter: true, Host: "hub.example.com", Tags: []string{}, UpstreamRouters: []string{}},
		edge: inventory.Agent{UUID: "00000000-0000-0000-0000-00000000000b", Name: "edge", RouterMode: inventory.RouterEdge,
			Tags: []string{service.DefaultTagPrefix + ": all"}, UpstreamRouters: []string{}},
	}
	f.env = (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	f.env.RegisterActivity(f.acts)
	f.tx(func(ctx context.Context, tx *store.Tx) error {
		for _, a := range []*inventory.Agent{&f.hub, &f.edge} {
			if err := tx.CreateAgent(ctx, a, "hash-"+a.Name); err != nil {
				return err
			}
		}
		return tx.InsertService(ctx, &service.Service{
			Spec: service.Spec{Name: "web", Type: service.TypeExternal, Resource: "203.0.113.10", TargetPort: 443,
				DefaultBridge: service.DefaultBridge, Tags: []string{}},
			BridgePort: 10024,
		})
	})
	return f
}

func (f *fixture) tx(fn func(context.Context, *store.Tx) error) {
	f.t.Helper()
	if err := f.st.InTx(context.Background(), func(tx *store.Tx) error { return fn(context.Background(), tx) }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) plan() pass.Plan {
	f.t.Helper()
	v, err := f.env.ExecuteActivity(f.acts.PlanService, "web")
	if err != nil {
		f.t.Fatal(err)
	}
	var p pass.Plan
	if err := v.Get(&p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) finish(in pass.Finish) string {
	f.t.Helper()
	v, err := f.env.ExecuteActivity(f.acts.FinishService, in)
	if err != nil {
		f.t.Fatal(err)
	}
	var msg string
	if err := v.Get(&msg); err != nil {
		f.t.Fatal(err)
	}
	return msg
}

// drift runs the drift check over every router and returns how many
// agent router repairs it counted.
func (f *fixture) drift() float64 {
	f.t.Helper()
	repairs := metrics.Repairs.WithLabelValues("agent")
	before := testutil.ToFloat64(repairs)
	if _, err := f.env.ExecuteActivity(f.acts.DriftCheck, ""); err != nil {
		f.t.Fatal(err)
	}
	return testutil.ToFloat64(repairs) - before
}

// holds counts the objects of web on an agent's router.
func (f *fixture) holds(agent string) int {
	f.t.Helper()
	var n int
	f.tx(func(ctx context.Context, tx *store.Tx) error {
		objs, err := tx.RouterObjects(ctx, agent, "web")
		n = len(objs)
		return err
	})
	return n
}

func (f *fixture) status() service.Service {
	f.t.Helper()
	var svc service.Service
	f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
		svc, err = tx.GetService(ctx, "web")
		return err
	})
	return svc
}

// A pass as the workflow runs it: plan, rebuild the sites, record the
// outcome; the placement is stored and the edge agent is left to the queue.
func TestPassThroughTheActivities(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			p := f.plan()
			if !p.Exists || p.Invalid != "" || p.ConnectorSite != f.hub.UUID || p.HubSite != f.hub.UUID ||
				!slices.Equal(p.Sites, []string{f.hub.UUID}) || p.FanoutCount != 1 || p.Fanout != nil {
				t.Fatalf("plan %+v", p)
			}
			queued := &recordingSignaler{}
			f.acts.Signaler = queued
			if _, err := f.env.ExecuteActivity(f.acts.QueueFanout, "web"); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(queued.agents, []string{f.edge.UUID}) {
				t.Errorf("the fan-out queued %v, want the edge agent alone", queued.agents)
			}
			if got := f.status().Placement; got.ConnectorSite != f.hub.UUID || got.HubSite != f.hub.UUID || !got.OnDefaultRouter {
				t.Errorf("stored placement %+v", got)
			}

			// Recorded before the routers are written: ready needs the objects.
			in := pass.Finish{Service: "web", Generation: p.Generation, ConnectorSite: p.ConnectorSite, HubSite: p.HubSite, Endpoint: p.Endpoint}
			if msg := f.finish(in); msg != "the tcpConnector is not on the router of agent "+f.hub.UUID {
				t.Errorf("finish before the writes: %q", msg)
			}
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			if msg := f.finish(in); msg != "" {
				t.Errorf("finish after the writes: %q", msg)
			}
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.ServiceEndpoint == nil || *svc.ServiceEndpoint != "hub.example.com" {
				t.Errorf("status %s endpoint %v, want ready at hub.example.com", svc.ProvisioningStatus, svc.ServiceEndpoint)
			}

			// Without a default router the placement is invalid and stored
			// empty, so the hub's objects go on the next rebuild.
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				hub := f.hub
				hub.DefaultRouter = false
				return tx.UpdateAgent(ctx, &hub)
			})
			p = f.plan()
			if p.Invalid != "Default router not found: set defaultRouter on one interior agent" || !slices.Equal(p.Sites, []string{f.hub.UUID}) {
				t.Errorf("plan without a default router: %+v", p)
			}
			if got := f.status().Placement; got.ConnectorSite != "" || got.HubSite != "" {
				t.Errorf("an invalid placement was stored with sites: %+v", got)
			}
			if msg := f.finish(pass.Finish{Service: "web", Generation: p.Generation, Error: p.Invalid}); msg != p.Invalid {
				t.Errorf("finish of an invalid placement: %q", msg)
			}
			if svc := f.status(); svc.ProvisioningStatus != service.StatusFailed {
				t.Errorf("status %s, want failed", svc.ProvisioningStatus)
			}
		})
	}
}

// A reconcile asked for while a pass is under way is answered by the next
// pass, not by that one: the status records the request count each pass
// read when it began, and a client waits for its number.
func TestAPassAnswersOnlyTheRequestsItRead(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			run := func(p pass.Plan) {
				t.Helper()
				if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
					t.Fatal(err)
				}
				f.finish(pass.Finish{Service: "web", Generation: p.Generation, ReconcileRequest: p.ReconcileRequest,
					ConnectorSite: p.ConnectorSite, HubSite: p.HubSite, Endpoint: p.Endpoint})
			}
			underWay := f.plan()
			var request int64
			f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
				request, err = tx.RequestReconcile(ctx, "web")
				return err
			})
			run(underWay)
			if svc := f.status(); svc.ProvisioningStatus != service.StatusReady || svc.ObservedReconcileRequest >= request {
				t.Fatalf("the pass under way answered request %d: %s, observed %d", request, svc.ProvisioningStatus, svc.ObservedReconcileRequest)
			}
			run(f.plan())
			if svc := f.status(); svc.ReconcileRequest != request || svc.ObservedReconcileRequest != request {
				t.Errorf("after the next pass: request %d, observed %d, want both %d", svc.ReconcileRequest, svc.ObservedReconcileRequest, request)
			}
		})
	}
}

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

// TestDriftCheckCountsOnlyRepairs: a drift check that finds a service's
// objects missing because its reconcile is still to come does that work
// without calling it a repair (a burst of creates raised the drift alert);
// an object someone else put in the router is a repair.
func TestDriftCheckCountsOnlyRepairs(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)

			// web is pending: planned (the API stores the placement), its
			// routers not written yet.
			p := f.plan()
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs for a service being created", got)
			}
			if n := f.holds(f.hub.UUID); n != 2 {
				t.Fatalf("after the drift check the hub holds %d objects of web, want its listener and connector", n)
			}

			// web's pass finishes; someone adds a listener in svcbridge's name.
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			f.finish(pass.Finish{Service: "web", Generation: p.Generation})
			if s := f.status(); s.ProvisioningStatus != service.StatusReady {
				t.Fatalf("web is %s", s.ProvisioningStatus)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.hub.UUID, store.RouterWrite{Base: []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{"stray-listener":{"name":"stray-listener"}}}}`)})
			})
			if got := f.drift(); got != 1 {
				t.Errorf("the drift check counted %v repairs of a hand-edited hub, want 1", got)
			}

			// web is deleted; the drift check removes its objects before
			// web's last pass does.
			f.tx(func(ctx context.Context, tx *store.Tx) error { return tx.DeleteService(ctx, "web", false) })
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs for a service being deleted", got)
			}
			if n := f.holds(f.hub.UUID); n != 0 {
				t.Errorf("after the drift check the hub holds %d objects of the deleted web", n)
			}
		})
	}
}

// A pass records its outcome before it queues its fan-out: until it has,
// the drift check writing the service's objects on an agent of the
// fan-out does the pass's work, and is no repair. Once queued, a hand
// edit of that agent is one.
func TestDriftCheckBeforeTheFanoutIsQueued(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			f.acts.Signaler = &recordingSignaler{}

			p := f.plan()
			if p.FanoutCount != 1 {
				t.Fatalf("web's pass reaches %d agents beyond its sites, want the edge", p.FanoutCount)
			}
			if _, err := f.env.ExecuteActivity(f.acts.ReconcileAgents, "web", p.Sites); err != nil {
				t.Fatal(err)
			}
			f.finish(pass.Finish{Service: "web", Generation: p.Generation, Fanout: true})
			if s := f.status(); s.ProvisioningStatus != service.StatusReady {
				t.Fatalf("web is %s", s.ProvisioningStatus)
			}
			if got := f.drift(); got != 0 {
				t.Errorf("the drift check counted %v repairs before web's fan-out was queued", got)
			}
			if n := f.holds(f.edge.UUID); n != 1 {
				t.Fatalf("after the drift check the edge holds %d objects of web, want its listener", n)
			}

			if _, err := f.env.ExecuteActivity(f.acts.QueueFanout, "web"); err != nil {
				t.Fatal(err)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, f.edge.UUID, store.RouterWrite{Drop: []routerconfig.Held{{Kind: routerconfig.KindListener, Service: "web"}}})
			})
			if got := f.drift(); got != 1 {
				t.Errorf("the drift check counted %v repairs of a hand-edited edge after the fan-out was queued, want 1", got)
			}
		})
	}
}

// A batch of the agent queue reconciles its agents in one transaction; an
// agent whose document cannot be planned (not JSON) fails alone and stays
// queued, while the others get their listeners and leave the queue.
func TestADrainBatchFailsOnlyTheAgentItCannotPlan(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			others := []inventory.Agent{
				{UUID: "00000000-0000-0000-0000-00000000000c", Name: "edge-c", RouterMode: inventory.RouterEdge,
					Tags: []string{service.DefaultTagPrefix + ": all"}, UpstreamRouters: []string{}},
				{UUID: "00000000-0000-0000-0000-00000000000d", Name: "edge-d", RouterMode: inventory.RouterEdge,
					Tags: []string{service.DefaultTagPrefix + ": all"}, UpstreamRouters: []string{}},
			}
			all := []string{f.edge.UUID, others[0].UUID, others[1].UUID}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				for i := range others {
					if err := tx.CreateAgent(ctx, &others[i], "hash-"+others[i].Name); err != nil {
						return err
					}
				}
				if err := tx.WriteRouter(ctx, others[1].UUID, store.RouterWrite{Base: []byte(`{"bridges":`)}); err != nil {
					return err
				}
				return tx.QueueAgents(ctx, all)
			})
			versions := map[string]string{}
			f.tx(func(ctx context.Context, tx *store.Tx) (err error) {
				for _, u := range all {
					if versions[u], err = tx.RouterVersion(ctx, u); err != nil {
						return err
					}
				}
				return nil
			})
			v, err := f.env.ExecuteActivity(f.acts.DrainAgents, 10)
			if err != nil {
				t.Fatal(err)
			}
			var batch AgentBatch
			if err := v.Get(&batch); err != nil {
				t.Fatal(err)
			}
			if batch.Claimed != 3 || len(batch.Failed) != 1 || !strings.HasPrefix(batch.Failed[0], others[1].UUID+": ") {
				t.Errorf("batch %+v, want 3 claimed and edge-d failed", batch)
			}
			f.tx(func(ctx context.Context, tx *store.Tx) error {
				for _, u := range all {
					held, err := tx.RouterObjects(ctx, u, "web")
					if err != nil {
						return err
					}
					queued, err := tx.AgentQueued(ctx, u)
					if err != nil {
						return err
					}
					version, err := tx.RouterVersion(ctx, u)
					if err != nil {
						return err
					}
					changes, err := tx.AgentChanges(ctx, u)
					if err != nil {
						return err
					}
					failing := u == others[1].UUID
					if (len(held) == 1) == failing || queued != failing || (version == versions[u]) != failing || !changes.MicroserviceConfig {
						t.Errorf("agent %s: holds %v, queued %v, version %s (was %s), changes %+v; want the listener, no mark, a new version and the flag raised, or for edge-d none but the flag",
							u, held, queued, version, versions[u], changes)
					}
				}
				return nil
			})
		})
	}
}
