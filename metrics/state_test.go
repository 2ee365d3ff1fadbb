package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"svcbridge/inventory"
	"svcbridge/metrics"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

func TestUnacknowledgedAge(t *testing.T) {
	now := time.UnixMilli(1_700_000_600_000)
	for _, tc := range []struct {
		name   string
		counts store.Counts
		want   time.Duration
	}{
		{"no agent behind", store.Counts{}, 0},
		{"behind since 10 minutes", store.Counts{AgentsUnacknowledged: 3, OldestUnacknowledged: 1_700_000_000_000}, 10 * time.Minute},
		{"a writer's clock ahead of this one", store.Counts{AgentsUnacknowledged: 1, OldestUnacknowledged: 1_700_000_601_000}, 0},
		{"a flag without a change (never written)", store.Counts{AgentsUnacknowledged: 1}, 0},
	} {
		if got := metrics.UnacknowledgedAge(tc.counts, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// gauges scrapes the registry and returns the value of each series of the
// named gauges, by label values joined with ",".
func gauges(t *testing.T, names ...string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, f := range families {
		if !want[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetValue()
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// TestStoreGauges: the services by status and the agents behind come from
// the store's one query, on both stores, at every scrape.
func TestStoreGauges(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)
			stop := metrics.Watch(metrics.Source{Store: st})
			defer stop()
			ctx := context.Background()
			tx := func(fn func(tx *store.Tx) error) {
				t.Helper()
				if err := st.InTx(ctx, fn); err != nil {
					t.Fatal(err)
				}
			}
			check := func(when string, want map[string]float64) {
				t.Helper()
				got := gauges(t, "svcbridge_services", "svcbridge_agents_unacknowledged")
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %s = %v, want %v (all: %v)", when, k, got[k], v, got)
					}
				}
			}
			check("empty store", map[string]float64{"svcbridge_services,ready": 0, "svcbridge_services,pending": 0,
				"svcbridge_services,failed": 0, "svcbridge_services,deleting": 0, "svcbridge_agents_unacknowledged": 0})
			if _, ok := gauges(t, "svcbridge_services")["svcbridge_services,failed"]; !ok {
				t.Fatalf("no svcbridge_services{status=\"failed\"} series on an empty store")
			}

			tx(func(tx *store.Tx) error {
				hub := &inventory.Agent{UUID: "a-1", Name: "hub", RouterMode: inventory.RouterInterior, DefaultRouter: true,
					Tags: []string{}, UpstreamRouters: []string{}}
				if err := tx.CreateAgent(ctx, hub, "hash-1"); err != nil {
					return err
				}
				for i, name := range []string{"a", "b", "c", "d", "gone"} {
					s := &service.Service{Spec: service.Spec{Name: name, Type: service.TypeExternal, Resource: "203.0.113.10",
						TargetPort: 443, DefaultBridge: "default-router", Tags: []string{}}, BridgePort: 10024 + i}
					if err := tx.InsertService(ctx, s); err != nil {
						return err
					}
				}
				reason := "agent fog-a has routerMode none"
				if _, err := tx.SetServiceStatus(ctx, "b", store.PassResult{Generation: 1, Status: service.StatusReady}); err != nil {
					return err
				}
				if _, err := tx.SetServiceStatus(ctx, "c", store.PassResult{Generation: 1, Status: service.StatusFailed, Reason: &reason}); err != nil {
					return err
				}
				if _, err := tx.SetServiceStatus(ctx, "d", store.PassResult{Generation: 1, Status: service.StatusFailed, Reason: &reason}); err != nil {
					return err
				}
				// A deleted service whose listener is still on the hub.
				gone := routerconfig.Held{Kind: store.KindListener, Service: "gone"}
				if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: []routerconfig.Held{gone}, Rewritten: map[string]bool{"listener/gone": true}}); err != nil {
					return err
				}
				if err := tx.DeleteService(ctx, "gone", false); err != nil {
					return err
				}
				return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(`[]`)})
			})
			check("after changes", map[string]float64{"svcbridge_services,ready": 1, "svcbridge_services,pending": 1,
				"svcbridge_services,failed": 2, "svcbridge_services,deleting": 1, "svcbridge_agents_unacknowledged": 1})
			if age := gauges(t, "svcbridge_agents_unacknowledged_oldest_seconds")["svcbridge_agents_unacknowledged_oldest_seconds"]; age < 0 || age > 60 {
				t.Errorf("oldest unacknowledged change %v s ago, want the write just made", age)
			}

			var changes store.Changes
			tx(func(tx *store.Tx) (err error) {
				changes, err = tx.AgentChanges(ctx, "a-1")
				if err != nil {
					return err
				}
				return tx.AckChanges(ctx, "a-1", changes.LastUpdated)
			})
			check("after the agent acknowledged", map[string]float64{"svcbridge_agents_unacknowledged": 0,
				"svcbridge_agents_unacknowledged_oldest_seconds": 0})
		})
	}
}

// failing is a store that does not answer.
type failing struct{}

func (failing) Counts(context.Context) (store.Counts, error) {
	return store.Counts{}, errors.New("down")
}

// TestGaugesLeftOutWhenUnreadable: a store or Temporal that does not answer
// leaves its gauges out of the scrape (never a stale or made-up value),
// counts the failure, and the rest of /metrics is still served.
func TestGaugesLeftOutWhenUnreadable(t *testing.T) {
	stop := metrics.Watch(metrics.Source{Store: failing{}, TaskQueue: "q",
		Pollers: func(context.Context) (int, error) { return 0, errors.New("unavailable") }})
	defer stop()
	before := testutil.ToFloat64(metrics.ScrapeErrors.WithLabelValues("store"))
	beforeTemporal := testutil.ToFloat64(metrics.ScrapeErrors.WithLabelValues("temporal"))
	got := gauges(t, "svcbridge_services", "svcbridge_task_queue_pollers", "svcbridge_build_info")
	for k := range got {
		if k != "svcbridge_build_info,"+testBuildLabels() {
			t.Errorf("scrape has %s although its source failed", k)
		}
	}
	if len(got) != 1 {
		t.Errorf("the rest of the scrape is missing: %v", got)
	}
	if d := testutil.ToFloat64(metrics.ScrapeErrors.WithLabelValues("store")) - before; d != 1 {
		t.Errorf("store scrape errors moved by %v, want 1", d)
	}
	if d := testutil.ToFloat64(metrics.ScrapeErrors.WithLabelValues("temporal")) - beforeTemporal; d != 1 {
		t.Errorf("temporal scrape errors moved by %v, want 1", d)
	}
}
