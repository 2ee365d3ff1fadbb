package activities

import (
	"context"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"svcbridge/inventory"
	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
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
	for name, fn := range f.acts.ByName() {
		f.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
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

func (f *fixture) plan() reconcile.Plan {
	f.t.Helper()
	v, err := f.env.ExecuteActivity(f.acts.PlanService, "web")
	if err != nil {
		f.t.Fatal(err)
	}
	var p reconcile.Plan
	if err := v.Get(&p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) finish(in reconcile.Finish) string {
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

// TestByNameIsEveryActivity: the worker registers every exported method
// that takes a context (an activity), each under the name reconcile gives
// it, and reconcile names no activity that does not exist.
func TestByNameIsEveryActivity(t *testing.T) {
	byName := (&Activities{}).ByName()
	if got, want := slices.Sorted(maps.Keys(byName)), slices.Sorted(slices.Values(reconcile.Activities)); !slices.Equal(got, want) {
		t.Errorf("ByName registers %v, reconcile names %v", got, want)
	}
	ctxType := reflect.TypeFor[context.Context]()
	typ := reflect.TypeFor[*Activities]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
			continue // not an activity (ByName)
		}
		fn, ok := byName[m.Name]
		if !ok {
			t.Errorf("activity %s is not registered under its name", m.Name)
			continue
		}
		// A method value's function is named for its method.
		if got := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name(); !strings.HasSuffix(got, ")."+m.Name+"-fm") {
			t.Errorf("%s is registered as %s", m.Name, got)
		}
	}
}
