package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.temporal.io/server/temporaltest"

	"svcbridge/metrics/promtest"
	"svcbridge/pgtest"
	"svcbridge/porttest"
	"svcbridge/proctest"
	"svcbridge/store"
	"svcbridge/workflows/temporalclient"
)

// The deployment's observability files, as the chart ships them.
const (
	alertRulesFile = "../deploy/observability/alerts.yaml"
	dashboardFile  = "../deploy/observability/dashboard.json"
)

// promSpeedup is how much faster than the real rules the tests' Prometheus
// runs them (promtest.Faster): 15 minutes of failure become 3 s, the 5
// minutes of the other alerts 1 s, the 15 minutes an agent may lag 3 s,
// and the drift alert's hour 12 s. Everything else in the rules is the
// file's.
const promSpeedup = 300

// promEnv are the settings of the svcbridge processes under Prometheus:
// the drift check every second, so that a repair is seen at once.
var promEnv = []string{"DRIFT_INTERVAL=1s", "RESYNC_INTERVAL=1s"}

// startPrometheus runs Prometheus with the file's rules at test speed,
// scraping targets.
func startPrometheus(t *testing.T, targets ...string) *promtest.Server {
	t.Helper()
	rules, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := promtest.Faster(rules, promSpeedup)
	if err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	return promtest.Start(t, fast, targets...)
}

// TestPrometheusScrapesDev: a real Prometheus scrapes a real `svcbridge
// dev` and evaluates the chart's alert rules while svcbridge goes through
// each alert's failure and recovery; every alert goes pending (where it
// has a for:), fires and resolves as its runbook says, and every panel of
// the dashboard shows data.
func TestPrometheusScrapesDev(t *testing.T) {
	proctest.Svcbridge(t) // built before the clock starts
	dataDir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
	began := time.Now()
	prom := startPrometheus(t, addr)

	// Nothing answers at the target yet: no svcbridge process can say
	// whether a worker polls, which the rule treats as none.
	prom.WaitAlert(t, "SvcbridgeWorkerNotPolling", v1.AlertStateFiring, nil, time.Minute)
	env := append([]string{"DATABASE_URL=", "AUTH_TOKENS_FILE=" + tokensFile(t)}, promEnv...)
	dev := start(t, env, "dev", "--data-dir", dataDir, "--listen", addr,
		"--temporal-port", fmt.Sprint(porttest.Free(t)), "--ui-port", fmt.Sprint(porttest.Free(t)))
	s := &system{t: t, url: "http://" + addr}
	waitHTTP(t, s.url+"/readyz", dev)
	t.Logf("dev ready %v after the start", time.Since(began).Round(100*time.Millisecond))
	prom.WaitAlert(t, "SvcbridgeWorkerNotPolling", "", nil, time.Minute)

	st, err := store.Open(context.Background(), filepath.Join(dataDir, "svcbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	promRound(t, s, st, prom)
	promCheckHistory(t, prom, began, "SvcbridgeWorkerNotPolling")
	promCheckDashboard(t, prom, began)
}

// TestPrometheusScrapesAPIAndWorker is the same with an api and a worker
// process, on PostgreSQL and a Temporal server of their own, both scraped:
// here the worker also comes up after the api, which reports no poller.
func TestPrometheusScrapesAPIAndWorker(t *testing.T) {
	proctest.Svcbridge(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	dbURL := pgtest.NewDB(t)
	ctx := context.Background()
	if err := temporalclient.RegisterSearchAttributes(ctx, ts.GetDefaultClient(), ts.GetDefaultNamespace()); err != nil {
		t.Fatalf("register search attributes: %v", err)
	}
	apiAddr, workerAddr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t)), fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
	env := append([]string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + ts.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE=" + ts.GetDefaultNamespace(), "TASK_QUEUE=" + taskQueue, "AUTH_TOKENS_FILE=" + tokensFile(t)}, promEnv...)
	began := time.Now()
	prom := startPrometheus(t, apiAddr, workerAddr)
	// Nothing is scraped yet, as in TestPrometheusScrapesDev.
	prom.WaitAlert(t, "SvcbridgeWorkerNotPolling", v1.AlertStateFiring, nil, time.Minute)
	api := start(t, env, "api", "--listen", apiAddr)
	s := &system{t: t, url: "http://" + apiAddr}
	waitHTTP(t, s.url+"/healthz", api)
	// The api asks Temporal: nobody polls the task queue.
	prom.WaitAlert(t, "SvcbridgeWorkerNotPolling", v1.AlertStateFiring, model.LabelSet{"task_queue": taskQueue}, time.Minute)
	worker := start(t, env, "worker", "--metrics-listen", workerAddr)
	waitHTTP(t, "http://"+workerAddr+"/healthz", worker)
	prom.WaitAlert(t, "SvcbridgeWorkerNotPolling", "", nil, time.Minute)

	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	promRound(t, s, st, prom)
	promCheckHistory(t, prom, began, "")
	promCheckDashboard(t, prom, began)
}

// promRound drives the installation behind s through the failures of the
// alerts other than SvcbridgeWorkerNotPolling, and their recoveries, as
// the runbook describes them; st is its database, for an outside writer.
func promRound(t *testing.T, s *system, st *store.Store, prom *promtest.Server) {
	hub := s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	fogA := s.agent(map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"},
		"tags": []string{"service.iofog.org/tag: checkout"}})
	s.microservice(map[string]any{"uuid": checkoutUUID, "application": "orders", "name": "checkout", "agent": "fog-a"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "tags": []string{"checkout"}, "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, nil)
	s.waitStatus("checkout", "ready")

	// SvcbridgeAgentsNotAcknowledging: agents created before their edge
	// nodes run hold their first router config; once they pull and
	// acknowledge, it resolves by itself.
	alerts := prom.WaitAlert(t, "SvcbridgeAgentsNotAcknowledging", v1.AlertStateFiring, nil, time.Minute)
	if d := string(alerts[0].Annotations["description"]); !strings.HasPrefix(d, "2 agent(s) hold a router config change") {
		t.Errorf("SvcbridgeAgentsNotAcknowledging's description %q, want it to count the 2 agents", d)
	}
	promAgents(t, s, hub, fogA)
	prom.WaitAlert(t, "SvcbridgeAgentsNotAcknowledging", "", nil, time.Minute)

	// SvcbridgeServicesFailed: the backend's agent loses its router; the
	// retries do not help until it gets it back.
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}, nil)
	s.waitStatus("checkout", "failed")
	alerts = prom.WaitAlert(t, "SvcbridgeServicesFailed", v1.AlertStateFiring, nil, time.Minute)
	if got, want := string(alerts[0].Annotations["summary"]), "1 svcbridge service(s) failed for more than 15 minutes"; got != want {
		t.Errorf("SvcbridgeServicesFailed's summary %q, want %q", got, want)
	}
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "edge", "upstreamRouters": []string{"hub"}}, nil)
	s.waitStatus("checkout", "ready")
	prom.WaitAlert(t, "SvcbridgeServicesFailed", "", nil, time.Minute)

	// SvcbridgeDriftRepairs: nothing so far was a repair. Someone edits
	// the hub's router config, pointing the checkout listener elsewhere;
	// the drift check puts it back, and the alert ends when the repair
	// leaves its window.
	if v := prom.Query(t, `count_over_time(ALERTS{alertname="SvcbridgeDriftRepairs"}[1h])`); len(v) > 0 {
		t.Errorf("SvcbridgeDriftRepairs was active with no router edited outside svcbridge: %v", v)
	}
	want, _ := s.bridges("hub")
	ctx := context.Background()
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		return tx.WriteRouter(ctx, hub.UUID, store.RouterWrite{Base: []byte(
			`{"bridges":{"tcpListeners":{"checkout-listener":{"name":"checkout-listener","port":"1","address":"elsewhere"}},"tcpConnectors":{}}}`)})
	}); err != nil {
		t.Fatal(err)
	}
	alerts = prom.WaitAlert(t, "SvcbridgeDriftRepairs", v1.AlertStateFiring, nil, time.Minute)
	if got, want := string(alerts[0].Annotations["summary"]), "svcbridge repaired 1 agent router config(s) changed outside it in the last hour"; got != want {
		t.Errorf("SvcbridgeDriftRepairs' summary %q, want %q", got, want)
	}
	if got, _ := s.bridges("hub"); string(got["checkout-listener"]) != string(want["checkout-listener"]) {
		t.Errorf("the hub's checkout-listener %s after the drift check, want %s", got["checkout-listener"], want["checkout-listener"])
	}
	prom.WaitAlert(t, "SvcbridgeDriftRepairs", "", nil, time.Minute)
}

// promAgents runs the agents' pull loop (read the changes, acknowledge
// them) for each agent until the test ends, as running edge nodes do.
func promAgents(t *testing.T, s *system, agents ...agentOut) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, a := range agents {
		wg.Go(func() {
			call := func(method, path string, body string, into any) error {
				req, _ := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+a.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
					return fmt.Errorf("%s %s: %s", method, path, resp.Status)
				}
				if into != nil {
					return json.NewDecoder(resp.Body).Decode(into)
				}
				return nil
			}
			var lastErr string
			for ctx.Err() == nil {
				var changes struct {
					LastUpdated int64 `json:"lastUpdated"`
				}
				err := call("GET", "/api/v3/agent/config/changes", "", &changes)
				if err == nil {
					err = call("PATCH", "/api/v3/agent/config/changes", fmt.Sprintf(`{"lastUpdated":%d}`, changes.LastUpdated), nil)
				}
				if err != nil && ctx.Err() == nil && err.Error() != lastErr {
					lastErr = err.Error()
					t.Logf("agent %s: %v", a.Name, err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
		})
	}
}

// promCheckHistory: since began, each alert with a for: was pending
// before it fired, each fired, and none is active now. Prometheus records
// no state of its first evaluation (it writes ALERTS once it has restored
// the alerts' state), so the pending state of an alert active from its
// start, atStart, is not looked for.
func promCheckHistory(t *testing.T, prom *promtest.Server, began time.Time, atStart string) {
	for _, c := range []struct {
		alert   string
		pending bool
	}{
		{"SvcbridgeWorkerNotPolling", true},
		{"SvcbridgeAgentsNotAcknowledging", true},
		{"SvcbridgeServicesFailed", true},
		{"SvcbridgeDriftRepairs", false}, // fires at once
	} {
		// Any sample in the window, however short the state lasted.
		seen := map[string]bool{}
		expr := fmt.Sprintf(`count_over_time(ALERTS{alertname=%q}[%s])`, c.alert, model.Duration(time.Since(began).Round(time.Second)+time.Second))
		for _, series := range prom.Query(t, expr) {
			seen[string(series.Metric["alertstate"])] = true
		}
		if c.alert == atStart {
			seen["pending"] = c.pending
		}
		if !seen["firing"] || seen["pending"] != c.pending {
			t.Errorf("%s since the start: %v, want firing and pending %v", c.alert, seen, c.pending)
		}
		if active := prom.Alerts(t, c.alert); len(active) > 0 {
			t.Errorf("%s still active after its recovery: %+v", c.alert, active)
		}
	}
}

// promCheckDashboard runs every query of the dashboard over the test's
// span as Grafana would, at a one-second step with $__rate_interval as
// Grafana computes it for a one-second scrape interval: each returns at
// least one number (not only NaN), and every series has the labels its
// legend shows.
func promCheckDashboard(t *testing.T, prom *promtest.Server, began time.Time) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	step := promtest.Interval
	vars := strings.NewReplacer(
		"$__rate_interval", model.Duration(max(step+promtest.Interval, 4*promtest.Interval)).String(),
		"$__interval", model.Duration(step).String(),
		"$__range", model.Duration(end.Sub(began).Truncate(time.Second)).String())
	legendLabel := regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
	queries := 0
	for _, p := range dash.Panels {
		if len(p.Panels) > 0 {
			t.Errorf("panel %q: collapsed rows are not read by this test", p.Title)
		}
		for _, target := range p.Targets {
			queries++
			expr := vars.Replace(target.Expr)
			m := prom.QueryRange(t, expr, began, end, step)
			numbers := 0
			for _, series := range m {
				for _, v := range series.Values {
					if !math.IsNaN(float64(v.Value)) {
						numbers++
					}
				}
				for _, l := range legendLabel.FindAllStringSubmatch(target.LegendFormat, -1) {
					if _, ok := series.Metric[model.LabelName(l[1])]; !ok {
						t.Errorf("panel %q: %s: series %v has no label %s for the legend %q", p.Title, expr, series.Metric, l[1], target.LegendFormat)
					}
				}
			}
			if numbers == 0 {
				t.Errorf("panel %q: %s returned no data (%d series, no point a number)", p.Title, expr, len(m))
			}
		}
	}
	if queries == 0 {
		t.Errorf("%s: no queries", dashboardFile)
	}
}
