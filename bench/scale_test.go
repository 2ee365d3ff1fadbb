package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scaleFake is a small API: services are ready 5 ms after their create,
// the hub's router document lists their listeners with an ETag, a watch
// of the services sends their names and a BOOKMARK, and /metrics reports
// 100 MiB, and a second of CPU more at each of its next busy scrapes, and
// 0.3 s more at each scrape while a watch is open.
type scaleFake struct {
	mu       sync.Mutex
	services map[string]time.Time // name -> created
	posts    int
	noHub    bool
	cpu      float64
	busy     int
	watching int
}

func (f *scaleFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/v3/services" && r.URL.Query().Get("watch") == "true" {
		f.watch(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	view := func(name string) map[string]any {
		status, observed := "pending", 0
		if time.Since(f.services[name]) > 5*time.Millisecond {
			status, observed = "ready", 1
		}
		return map[string]any{"name": name, "type": "external", "provisioningStatus": status, "generation": 1,
			"observedGeneration": observed, "bridgePort": 10024, "placement": map[string]string{"hubAgent": "hub-uuid", "connectorAgent": "hub-uuid"}}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range f.services {
			if !yield(name) {
				return
			}
		}
	})
	path := r.URL.Path
	switch {
	case r.Method == "GET" && path == "/metrics":
		if f.busy > 0 {
			f.cpu, f.busy = f.cpu+1, f.busy-1
		}
		if f.watching > 0 {
			f.cpu += 0.3
		}
		w.Write([]byte("# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 1.048576e+08\n"))
		fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", f.cpu)
	case r.Method == "GET" && path == "/api/v3/agents":
		if f.noHub {
			w.Write([]byte(`[]`))
			return
		}
		w.Write([]byte(`[{"uuid":"hub-uuid","name":"hub","routerMode":"interior","defaultRouter":true}]`))
	case r.Method == "GET" && path == "/api/v3/agents/hub-uuid/router":
		listeners := map[string]any{}
		for _, name := range names {
			listeners[name+"-listener"] = map[string]string{"name": name + "-listener", "port": "10024"}
		}
		doc, _ := json.Marshal(map[string]any{"bridges": map[string]any{"tcpListeners": listeners}})
		sum := sha256.Sum256(doc)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(doc)
	case r.Method == "GET" && path == "/api/v3/services":
		out := []any{}
		for _, name := range names {
			out = append(out, view(name))
		}
		if r.URL.Query().Get("limit") == "500" && len(out) > 500 {
			out = out[:500]
		}
		json.NewEncoder(w).Encode(out)
	case r.Method == "POST" && path == "/api/v3/services":
		var in struct {
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if len(in.Tags) != 0 {
			w.WriteHeader(400)
			w.Write([]byte(`{"name":"ValidationError","message":"scale's services select no agent"}`))
			return
		}
		f.services[in.Name] = time.Now()
		f.posts++
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(view(in.Name))
	case strings.HasPrefix(path, "/api/v3/services/"):
		name := strings.TrimPrefix(path, "/api/v3/services/")
		if _, ok := f.services[name]; !ok {
			w.WriteHeader(404)
			w.Write([]byte(`{"name":"NotFoundError","message":"Service with name ` + name + ` not found"}`))
			return
		}
		if r.Method == "DELETE" {
			delete(f.services, name)
			w.WriteHeader(204)
			return
		}
		json.NewEncoder(w).Encode(view(name))
	default:
		w.WriteHeader(404)
		w.Write([]byte(`{"name":"NotFoundError","message":"Route ` + r.Method + " " + path + ` not found"}`))
	}
}

// watch answers a watch of the services until its client goes.
func (f *scaleFake) watch(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	for name := range f.services {
		fmt.Fprintf(w, `{"type":"ADDED","object":{"name":%q}}`+"\n", name)
	}
	f.watching++
	f.mu.Unlock()
	w.Write([]byte(`{"type":"BOOKMARK","object":{}}` + "\n"))
	w.(http.Flusher).Flush()
	<-r.Context().Done()
	f.mu.Lock()
	f.watching--
	f.mu.Unlock()
}

// runBench runs Run against server with the bench command's defaults,
// changed by set.
func runBench(t *testing.T, server string, set func(*Config)) (err error, stdout, stderr string) {
	t.Helper()
	cfg := Config{Server: server, Scenario: "all", N: 100, Clients: 10, Agents: 10, OpTimeout: time.Minute,
		Poll: 5 * time.Millisecond, Settle: 15 * time.Second, TagPrefix: "service.iofog.org/tag",
		Steps: 4, Samples: 20, Reads: 5, ReadyTimeout: 10 * time.Minute}
	set(&cfg)
	var o, e bytes.Buffer
	err = Run(context.Background(), cfg, &o, &e)
	return err, o.String(), e.String()
}

// The scale scenario prints step 0 (the system as it is) and one line per
// step, fills up to --n, and deletes what it created from a --server.
func TestBenchScaleSteps(t *testing.T) {
	// The server is busy for the first two scrapes: step 0 waits for it.
	f := &scaleFake{services: map[string]time.Time{"theirs": time.Now().Add(-time.Hour)}, busy: 2}
	srv := httptest.NewServer(f)
	defer srv.Close()
	err, stdout, stderr := runBench(t, srv.URL, func(c *Config) {
		c.Scenario, c.Clients, c.N, c.Steps, c.Samples, c.Reads = "scale", 50, 41, 2, 3, 2
		c.RestWindow = 200 * time.Millisecond
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), stdout)
	}
	// One service was there: step 0 measures 1, step 1 fills up to
	// 20 (the 3 samples of step 0 count), step 2 up to 41.
	want := []struct{ target, services, filled int }{{0, 1, 0}, {20, 20, 16}, {41, 41, 18}}
	var first ScaleStep
	for i, line := range lines {
		var r ScaleStep
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %d %s: %v", i, line, err)
		}
		if i == 0 {
			first = r
		}
		w := want[i]
		if r.Scenario != "scale" || r.Step != i || r.Target != w.target || r.Services != w.services || r.Filled != w.filled ||
			r.Clients != 50 || r.Errors != 0 || r.Pending != 0 || r.Samples != 3 || r.CreateReadyP50 <= 0 || r.CreateReadyP90 < r.CreateReadyP50 ||
			r.ListAllKB <= 0 || r.HubAgent != "hub" || r.HubDocKB <= 0 || !r.Hub304 || r.HubNote != "" || r.RSSMB != 100 || r.RSSFrom != "metrics" || r.WallS <= 0 {
			t.Errorf("line %d: %s", i, line)
		}
		// The fake answers reads in well under 0.1 ms (0 in the line), and
		// a create is ready 5 ms after it.
		if fill := r.Filled > 0; fill != (r.FillRate > 0) || fill != (r.PostRate > 0) || fill != (r.Gets > 0) || fill != (r.FillS > 0) || r.GetP99 < r.GetP50 || r.PostP99 < r.PostP50 {
			t.Errorf("line %d, fill figures: %s", i, line)
		}
	}
	// At rest the fake's CPU stands still; with a watch open each scrape
	// adds 0.3 s, each window of 0.3 s taking two.
	if first.RestCPU != 0 || first.WatchCPU < 999 || first.WatchCPU > 1001 {
		t.Errorf("CPU at rest %.1f and watching %.1f ms a second, want 0 and 1000", first.RestCPU, first.WatchCPU)
	}
	if first.RestWaitS < 0.4 || f.busy != 0 {
		t.Errorf("step 0 read after %.1f s, with %d busy scrapes left; want it to wait 2 windows of 0.2 s for the server to rest", first.RestWaitS, f.busy)
	}
	if f.posts != 16+18+3*3 {
		t.Errorf("%d creates, want %d", f.posts, 16+18+3*3)
	}
	if len(f.services) != 1 {
		t.Errorf("left behind: %v", f.services)
	}
	if !strings.Contains(stderr, "bench: scale step 2/2: filling 18 services (41 in all)...") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// Without a hub agent, scale still measures, and says so in the line.
func TestBenchScaleNoHub(t *testing.T) {
	f := &scaleFake{services: map[string]time.Time{}, noHub: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	err, stdout, stderr := runBench(t, srv.URL, func(c *Config) {
		c.Scenario, c.Clients, c.N, c.Steps, c.Samples, c.Reads = "scale", 50, 2, 1, 0, 1
		c.RestWindow = 100 * time.Millisecond
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"hub_agent":"","hub_doc_ms":0,"hub_doc_kb":0,"hub_doc_304_ms":0,"hub_304":false,"hub_note":"no hub agent`) ||
		// Step 1's services name the hub in their placement.
		!strings.Contains(lines[1], `"hub_agent":"hub-uuid"`) || !strings.Contains(lines[1], `"hub_304":true`) {
		t.Errorf("lines:\n%s", stdout)
	}
	// Other scenarios still need the hub.
	if err, _, _ := runBench(t, srv.URL, func(c *Config) { c.Scenario, c.N = "create-latency", 1 }); err == nil || !strings.Contains(err.Error(), "no default router") {
		t.Errorf("create-latency with no hub: %v", err)
	}
}

func TestBenchScaleIsNotInAll(t *testing.T) {
	if slices.Contains(Scenarios, "scale") {
		t.Error(`"all" runs scale`)
	}
}

func TestBenchRSSParsers(t *testing.T) {
	v, ok := metricValue([]byte("# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes_x 1\nprocess_resident_memory_bytes 5.24288e+07\n"), "process_resident_memory_bytes")
	if !ok || v != 52428800 {
		t.Errorf("metricValue: %v %v", v, ok)
	}
	if _, ok := metricValue([]byte("go_goroutines 3\n"), "process_resident_memory_bytes"); ok {
		t.Error("metricValue found a missing metric")
	}
	summary := []byte(`# TYPE temporal_workflow_task_execution_latency_seconds summary
temporal_workflow_task_execution_latency_seconds{workflow_type="A",quantile="0.99"} 9
temporal_workflow_task_execution_latency_seconds{workflow_type="A",quantile="0.999"} 0.25
temporal_workflow_task_execution_latency_seconds{workflow_type="B",quantile="0.999"} 1.5
temporal_workflow_task_execution_latency_seconds_sum{workflow_type="B",quantile="0.999"} 7
`)
	if v, ok := metricMax(summary, "temporal_workflow_task_execution_latency_seconds", `quantile="0.999"`); !ok || v != 1.5 {
		t.Errorf("metricMax: %v %v, want 1.5", v, ok)
	}
	if _, ok := metricMax(summary, "temporal_workflow_task_schedule_to_start_latency_seconds", `quantile="0.999"`); ok {
		t.Error("metricMax found a missing metric")
	}
	kb, ok := procStatusKB([]byte("Name:\tsvcbridge\nVmHWM:\t  2048 kB\nVmRSS:\t  1536 kB\n"), "VmRSS")
	if !ok || kb != 1536 {
		t.Errorf("procStatusKB: %v %v", kb, ok)
	}
}

// The counters of an api and a worker, exposed one after the other, add
// up; a longer name is another metric; labels select.
func TestBenchMetricSum(t *testing.T) {
	text := []byte("svcbridge_store_statements_total 120\nsvcbridge_store_statements_total_x 7\n# api above, worker below\nsvcbridge_store_statements_total 80\n" +
		"temporal_local_activity_total{activity_type=\"A\",workflow_type=\"ServiceWorkflow\"} 3\n" +
		"temporal_local_activity_total{activity_type=\"B\",workflow_type=\"ServiceWorkflow\"} 4\n" +
		"temporal_local_activity_total{activity_type=\"C\",workflow_type=\"AgentQueueWorkflow\"} 50\n")
	if v, ok := metricSum(text, "svcbridge_store_statements_total", ""); !ok || v != 200 {
		t.Errorf("metricSum: %v %v, want 200", v, ok)
	}
	if v, ok := metricSum(text, "temporal_local_activity_total", `workflow_type="ServiceWorkflow"`); !ok || v != 7 {
		t.Errorf("metricSum of the service workflow's: %v %v, want 7", v, ok)
	}
	if _, ok := metricSum(text, "svcbridge_store_transactions_total", ""); ok {
		t.Error("metricSum found a missing metric")
	}
}

// TestPendingProbeWait: the pending gauge is read a tenth of the
// expected rest of the wait apart, never less than the poll interval nor
// more than a second, and every interval until a rate is known.
func TestPendingProbeWait(t *testing.T) {
	const interval = 100 * time.Millisecond
	for _, c := range []struct {
		name             string
		pending, settled float64
		elapsed, want    time.Duration
	}{
		{"none settled yet", 2000, 0, 3 * time.Second, interval},
		{"first reading", 2000, 0, 0, interval},
		{"a long tail: at most a second", 1500, 100, 2 * time.Second, time.Second},
		{"a tenth of what is left", 300, 600, 10 * time.Second, 500 * time.Millisecond},
		{"near the end: the interval", 20, 1000, 10 * time.Second, interval},
		{"the gauge went up (new creates): the interval", 500, -20, 5 * time.Second, interval},
	} {
		if got := pendingProbeWait(interval, c.pending, c.settled, c.elapsed); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
