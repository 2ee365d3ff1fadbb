package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"svcbridge/wire"
)

// ScaleStep is one step of the scale scenario, one JSON line: how the
// system answers with Services services in it (see benchHelp).
type ScaleStep struct {
	Scenario string `json:"scenario"`
	Step     int    `json:"step"`
	// Target is how many services the step fills up to; Services how
	// many the whole list held when the reads were measured.
	Target   int `json:"target"`
	Services int `json:"services"`
	Clients  int `json:"clients"`

	// The fill: Filled services created by Clients clients, until every
	// one was ready (FillS); the reader's GET ?limit=500 meanwhile.
	Filled   int     `json:"filled"`
	FillS    float64 `json:"fill_s"`
	FillRate float64 `json:"fill_rate_per_s"`
	PostRate float64 `json:"post_rate_per_s"`
	PostP50  float64 `json:"post_p50_ms"`
	PostP99  float64 `json:"post_p99_ms"`
	Gets     int     `json:"gets"`
	GetP50   float64 `json:"get_p50_ms"`
	GetP99   float64 `json:"get_p99_ms"`
	// Pending: services of the fill not ready after --ready-timeout.
	Pending int `json:"pending"`
	// WorkflowTaskP999: the slowest workflow type's p99.9 workflow task
	// execution time on the server's worker, read after the fill (the
	// SDK's summary spans its last 10 minutes); 0 when the server does
	// not expose it (an api without a worker).
	WorkflowTaskP999 float64 `json:"workflow_task_p999_ms"`
	// StatementsPerService and TransactionsPerService: what the store
	// was sent from the fill's start until the server was at rest after it
	// (the creates, their passes, the reader's lists), per service filled, summed over every process the server's
	// /metrics shows (dev: all of svcbridge); 0 when it does not say.
	StatementsPerService   float64 `json:"statements_per_service"`
	TransactionsPerService float64 `json:"transactions_per_service"`
	// The service workflows' work over the fill, from the worker's SDK
	// metrics: workflow tasks and local activities per service filled,
	// and sticky cache misses (a task that finds its workflow evicted and
	// fetches its history again) per 1,000 of those tasks; 0 when
	// /metrics does not show the worker's.
	WorkflowTasksPerService   float64 `json:"workflow_tasks_per_service"`
	LocalActivitiesPerService float64 `json:"local_activities_per_service"`
	CacheMissesPer1000Tasks   float64 `json:"sticky_cache_misses_per_1000_tasks"`

	// At rest: RestWaitS is how long the server took to come to rest
	// after the fill (see waitAtRest).
	RestWaitS      float64 `json:"rest_wait_s"`
	Samples        int     `json:"samples"`
	CreateReadyP50 float64 `json:"create_ready_p50_ms"`
	CreateReadyP90 float64 `json:"create_ready_p90_ms"`
	List500P50     float64 `json:"list500_p50_ms"`
	ListAllP50     float64 `json:"list_all_p50_ms"`
	ListAllKB      float64 `json:"list_all_kb"`
	HubAgent       string  `json:"hub_agent"`
	HubDocMS       float64 `json:"hub_doc_ms"`
	HubDocKB       float64 `json:"hub_doc_kb"`
	Hub304MS       float64 `json:"hub_doc_304_ms"`
	Hub304         bool    `json:"hub_304"`
	HubNote        string  `json:"hub_note,omitempty"`
	RSSMB          float64 `json:"rss_mb"`
	RSSFrom        string  `json:"rss_from"`
	// RestCPU and WatchCPU are the server's CPU at rest, in ms a second,
	// with no request and then with a watch of the services open (a
	// console's; see watchCost); 0 when its /metrics does not say.
	RestCPU  float64 `json:"rest_cpu_ms_per_s"`
	WatchCPU float64 `json:"watch_cpu_ms_per_s"`

	Errors int     `json:"errors"`
	WallS  float64 `json:"wall_s"`
}

// scale runs the scale scenario, printing each step's line as it ends,
// and returns the problems it found (errors, services never ready).
func (b *bench) scale(ctx context.Context, enc *json.Encoder) ([]string, error) {
	const scenario = "scale"
	cfg := b.cfg

	all, err := b.listStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the services: %w", err)
	}
	present := len(all)
	var mine []string // every service this run asked for
	if b.cfg.Embedded {
		// The embedded server, its hub with it, is discarded whole.
		b.keepHub = true
	} else {
		defer func() { b.cleanup(mine, nonEmpty(b.hub.UUID), nil) }()
	}
	var bad []string
	hub := b.hub.UUID
	fills, samples := 0, 0
	for step := 0; step <= cfg.Steps; step++ {
		b.mu.Lock()
		b.reported = 0
		b.mu.Unlock()
		start := time.Now()
		r := ScaleStep{Scenario: scenario, Step: step, Target: step * cfg.N / cfg.Steps, Clients: cfg.Clients, HubAgent: b.hub.Name}
		if fill := r.Target - present; step > 0 && fill > 0 {
			fmt.Fprintf(b.errOut, "bench: scale step %d/%d: filling %d services (%d in all)...\n", step, cfg.Steps, fill, r.Target)
			names := b.serviceNames("s", fills, fill)
			fills += fill
			mine = append(mine, names...)
			if h := b.scaleFill(ctx, &r, names); h != "" {
				hub = h
			}
		}
		if ctx.Err() != nil {
			return bad, ctx.Err()
		}
		r.RestWaitS = round(b.waitAtRest(ctx, restCPU).Seconds(), 1)
		b.fillCosts(ctx, &r)
		b.scaleReads(ctx, &r, hub)
		if r.Services > 0 {
			present = r.Services
		}
		r.RSSMB, r.RSSFrom = b.rss(ctx)
		b.watchCost(ctx, &r)
		if cfg.Samples > 0 {
			names := b.serviceNames("r", samples, cfg.Samples)
			samples += cfg.Samples
			mine = append(mine, names...)
			lat, created, _ := b.createUntilReady(ctx, scenario, names, 1)
			present += len(created)
			r.Samples = lat.OK()
			r.Errors += lat.Errors()
			r.CreateReadyP50, r.CreateReadyP90 = lat.ms(0.50), lat.ms(0.90)
		}
		r.WallS = round(time.Since(start).Seconds(), 3)
		if err := enc.Encode(r); err != nil {
			return bad, err
		}
		if r.Errors > 0 || r.Pending > 0 {
			bad = append(bad, fmt.Sprintf("%s step %d: %s, %d pending", scenario, step, plural(r.Errors, "error", "errors"), r.Pending))
		}
		if ctx.Err() != nil {
			return bad, ctx.Err()
		}
	}
	return bad, nil
}

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(s string) bool { return s == "" })
}

// scaleReadEvery is how often the reader reads during a fill.
const scaleReadEvery = 50 * time.Millisecond

// scaleFill creates names on --clients clients while one reader (unless
// Config.NoFillReader) reads GET /api/v3/services?limit=500 every
// scaleReadEvery, then waits until every one is ready. It returns the hub
// agent the services' placement names ("" if none).
func (b *bench) scaleFill(ctx context.Context, r *ScaleStep, names []string) string {
	const scenario = "scale"
	var posts, gets Latencies
	stop, readerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readerDone)
		var buf bytes.Buffer
		for !b.cfg.NoFillReader {
			select {
			case <-stop:
				return
			default:
			}
			_, _, _, d, err := b.timedGet(ctx, "/api/v3/services?limit=500", nil, &buf)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				b.opError(scenario, fmt.Errorf("GET /api/v3/services?limit=500: %w", err))
			}
			gets.Add(d, err)
			// A dashboard's pace, not a load of its own.
			select {
			case <-stop:
				return
			case <-time.After(scaleReadEvery):
			}
		}
	}()
	var mu sync.Mutex
	var created []string
	before, counted := b.fillCounters(ctx)
	start := time.Now()
	Parallel(ctx, len(names), b.cfg.Clients, func(i int) {
		t0 := time.Now()
		err := b.c.createService(ctx, externalService(names[i], nil))
		posts.Add(time.Since(t0), err)
		if err != nil {
			b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
			return
		}
		mu.Lock()
		created = append(created, names[i])
		mu.Unlock()
	})
	postWall := time.Since(start)
	ready, failed, pending, hub, at := b.waitReady(ctx, created)
	close(stop)
	<-readerDone
	if counted {
		b.fillStart = before
	}

	fill := at.Sub(start)
	r.Filled = len(created)
	r.FillS = round(fill.Seconds(), 3)
	r.FillRate = round(float64(ready)/fill.Seconds(), 2)
	r.PostRate = round(float64(posts.OK())/postWall.Seconds(), 2)
	r.Pending = pending
	r.Errors += posts.Errors() + gets.Errors() + failed
	r.Gets = gets.OK()
	r.PostP50, r.PostP99 = posts.ms(0.50), posts.ms(0.99)
	r.GetP50, r.GetP99 = gets.ms(0.50), gets.ms(0.99)
	if text, ok := b.serverMetrics(ctx); ok {
		// Temporal fails a workflow task that runs over 10 s, and retries it.
		p, _ := metricMax(text, "temporal_workflow_task_execution_latency_seconds", `quantile="0.999"`)
		r.WorkflowTaskP999 = round(p*1000, 1)
	}
	return hub
}

// serviceStatus is the part of a listed service that waitReady reads.
type serviceStatus struct {
	Name               string          `json:"name"`
	ProvisioningStatus string          `json:"provisioningStatus"`
	ProvisioningError  *string         `json:"provisioningError"`
	Generation         int64           `json:"generation"`
	ObservedGeneration int64           `json:"observedGeneration"`
	Placement          *wire.Placement `json:"placement"`
}

// listStatus reads the whole list at once (no pages: one read of the
// store, where ?limit= pages each read all of it).
func (b *bench) listStatus(ctx context.Context) ([]serviceStatus, error) {
	var out []serviceStatus
	return out, b.c.call(ctx, http.MethodGet, "/api/v3/services", nil, &out)
}

// waitReady lists every service every max(--poll, 100ms) until each of
// names is ready or failed, or --ready-timeout passes. It returns how many
// are ready, failed and pending, the hub their placement names, and when
// it saw the last one settle.
func (b *bench) waitReady(ctx context.Context, names []string) (ready, failed, pending int, hub string, at time.Time) {
	pending = len(names)
	if len(names) == 0 {
		return 0, 0, 0, "", time.Now()
	}
	want := make(map[string]bool, len(names))
	for _, name := range names {
		want[name] = true
	}
	interval := max(b.cfg.Poll, 100*time.Millisecond)
	start := time.Now()
	deadline := start.Add(b.cfg.ReadyTimeout)
	reported := map[string]bool{}
	first := -1.0 // the pending gauge's first reading
	for {
		// The server's pending gauge is one count; the list, whose cost
		// grows with the services, is read once it says none is left.
		if p := b.serverPending(ctx); p > 0 && time.Now().Before(deadline) {
			if first < 0 {
				first = p
			}
			select {
			case <-ctx.Done():
			case <-time.After(pendingProbeWait(interval, p, first-p, time.Since(start))):
			}
			continue
		}
		list, err := b.listStatus(ctx)
		if err != nil && ctx.Err() == nil {
			b.opError("scale", fmt.Errorf("list the services: %w", err))
		}
		if err == nil {
			ready, failed = 0, 0
			for _, s := range list {
				if !want[s.Name] || s.ObservedGeneration != s.Generation {
					continue
				}
				switch s.ProvisioningStatus {
				case "ready":
					ready++
					if hub == "" && s.Placement != nil {
						hub = s.Placement.HubAgent
					}
				case "failed":
					failed++
					if !reported[s.Name] {
						reported[s.Name] = true
						b.opError("scale", &failedError{service: s.Name, message: s.ProvisioningError})
					}
				}
			}
			// The rest, listed or not, are pending.
			pending = len(names) - ready - failed
			if pending == 0 {
				return ready, failed, 0, hub, time.Now()
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return ready, failed, pending, hub, time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// pendingProbeWait is how long waitReady waits to read the server's
// pending gauge again, when pending services are left and settled others
// settled in the elapsed time since its first reading: a tenth of the
// time the rest would take at that rate, from interval (also while none
// has settled yet) to a second. A reading is the server's whole /metrics, milliseconds
// of its CPU: read every interval through the tail of a fill the server
// outran its worker in, the readings were a tenth of the api's CPU the
// bench measured. Near the end they are interval apart again, so the
// last service to settle is seen as soon as before.
func pendingProbeWait(interval time.Duration, pending, settled float64, elapsed time.Duration) time.Duration {
	if settled <= 0 || elapsed <= 0 {
		return interval
	}
	left := time.Duration(pending / settled * float64(elapsed))
	return min(max(left/10, interval), time.Second)
}

// The server is at rest once it used less than restCPU of a core over
// Config.RestWindow, and quiet below quietCPU; waitAtRest waits at most
// restWait for either.
const (
	restCPU  = 0.2
	quietCPU = 0.05
	restWait = 30 * time.Second
)

// restWindow is Config.RestWindow, a second unless set.
func (b *bench) restWindow() time.Duration { return cmp.Or(b.cfg.RestWindow, time.Second) }

// waitAtRest waits until the server used less than cpu of a core over a
// rest window (process_cpu_seconds_total of its /metrics), at most
// restWait, and returns how long it waited: a fill leaves the server work
// for seconds after its last service is ready (Temporal times each
// workflow task out 10 s after it started, and reloads the workflow to
// see it finished), which the reads at rest are not meant to measure. It
// does not wait when /metrics does not say.
func (b *bench) waitAtRest(ctx context.Context, cpu float64) time.Duration {
	start, window := time.Now(), b.restWindow()
	last, ok := b.serverMetric(ctx, "process_cpu_seconds_total")
	for ok && time.Since(start) < restWait {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(window):
		}
		var now float64
		if now, ok = b.serverMetric(ctx, "process_cpu_seconds_total"); ok && now-last < cpu*window.Seconds() {
			break
		}
		last = now
	}
	return time.Since(start)
}

// scaleReads measures the system at rest: the lists, the hub's router
// document (200, then 304), each --reads times.
func (b *bench) scaleReads(ctx context.Context, r *ScaleStep, hub string) {
	const scenario = "scale"
	reads := b.cfg.Reads
	var buf bytes.Buffer
	timed := func(path string, h http.Header, ok func(code int, body []byte)) float64 {
		var lat Latencies
		for range reads {
			code, _, body, d, err := b.timedGet(ctx, path, h, &buf)
			if err != nil {
				b.opError(scenario, fmt.Errorf("GET %s: %w", path, err))
			} else if ok != nil {
				ok(code, body)
			}
			lat.Add(d, err)
		}
		r.Errors += lat.Errors()
		return lat.ms(0.50)
	}
	r.List500P50 = timed("/api/v3/services?limit=500", nil, nil)
	r.ListAllP50 = timed("/api/v3/services", nil, func(_ int, body []byte) {
		var items []json.RawMessage // copies: counted once, not garbage for every read
		if r.Services == 0 && json.Unmarshal(body, &items) == nil {
			r.Services = len(items)
		}
		r.ListAllKB = round(float64(len(body))/1024, 1)
	})

	if hub == "" {
		r.HubNote = "no hub agent: the server has no default router, and no service's placement names a hubAgent"
		return
	}
	if hub != b.hub.UUID {
		r.HubAgent = hub // the placement's, by uuid
	}
	path := "/api/v3/agents/" + esc(hub) + "/router"
	// The hub's document is read before timing, for its ETag: a 404
	// (no document yet) is said in the line.
	code, etag, _, _, err := b.timedGet(ctx, path, nil, &buf)
	switch {
	case err != nil:
		r.HubNote = fmt.Sprintf("GET %s: %v", path, err)
		return
	case code != http.StatusOK:
		r.HubNote = fmt.Sprintf("GET %s answered %d", path, code)
		return
	}
	r.HubDocMS = timed(path, nil, func(_ int, body []byte) { r.HubDocKB = round(float64(len(body))/1024, 1) })
	if etag == "" {
		r.HubNote = "the hub's router document has no ETag: no conditional GET"
		return
	}
	r.Hub304 = true
	r.Hub304MS = timed(path, http.Header{"If-None-Match": {etag}}, func(code int, _ []byte) {
		if code != http.StatusNotModified {
			r.Hub304 = false
		}
	})
	if !r.Hub304 {
		r.HubNote = "the hub's router document was answered again, not 304, with If-None-Match: " + etag
	}
}

// watchCost sets r's RestCPU and WatchCPU: the server's CPU, in ms a
// second, with no request and with a watch of the services open (what an
// open console costs, whose lists' feeds read them every second), once
// the server is quiet (quietCPU): a window without, two with the watch
// open once it sent its initial state, one without, so that the server's
// own work settling after a fill weighs on both alike. Both stay 0 when
// /metrics does not say.
func (b *bench) watchCost(ctx context.Context, r *ScaleStep) {
	b.waitAtRest(ctx, quietCPU)
	window := 3 * b.restWindow() / 2
	var sum [2]float64 // without, with
	ok := true
	over := func(with int) {
		before, ok1 := b.serverMetric(ctx, "process_cpu_seconds_total")
		select {
		case <-ctx.Done():
		case <-time.After(window):
		}
		after, ok2 := b.serverMetric(ctx, "process_cpu_seconds_total")
		sum[with] += after - before
		ok = ok && ok1 && ok2 && ctx.Err() == nil
	}
	over(0)
	if err := b.whileWatching(ctx, func() { over(1); over(1) }); err != nil {
		r.Errors++
		b.opError("scale", fmt.Errorf("watch the services: %w", err))
		return
	}
	over(0)
	if ok {
		perSecond := func(cpu float64) float64 { return round(cpu*1000/(2*window.Seconds()), 1) }
		r.RestCPU, r.WatchCPU = perSecond(sum[0]), perSecond(sum[1])
	}
}

// whileWatching runs f with a watch of the services open, once the watch
// sent its initial state (within requestTimeout).
func (b *bench) whileWatching(ctx context.Context, f func()) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	slow := time.AfterFunc(requestTimeout, stop)
	defer slow.Stop()
	req, err := b.c.request(ctx, http.MethodGet, "/api/v3/services?watch=true", nil)
	if err != nil {
		return err
	}
	// Not b.c.http, whose timeout would end the stream.
	resp, err := (&http.Client{Transport: b.c.http.Transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for !bytes.HasPrefix(lines.Bytes(), []byte(`{"type":"BOOKMARK"`)) {
		if !lines.Scan() {
			return fmt.Errorf("no BOOKMARK after the initial state (%v)", lines.Err())
		}
	}
	if !slow.Stop() {
		return ctx.Err()
	}
	go io.Copy(io.Discard, resp.Body) // its changes, if any
	f()
	return nil
}

// timedGet GETs path with the headers h (see exchange, for buf), and
// returns the answer's ETag.
func (b *bench) timedGet(ctx context.Context, path string, h http.Header, buf *bytes.Buffer) (code int, etag string, body []byte, d time.Duration, err error) {
	code, header, body, d, err := b.c.exchange(ctx, http.MethodGet, path, h, nil, buf)
	return code, header.Get("ETag"), body, d, err
}

// serverPending is the server's svcbridge_services{status="pending"}
// gauge; -1 when its /metrics does not say.
func (b *bench) serverPending(ctx context.Context) float64 {
	// Read often: from the server alone, not every process Config.Metrics
	// joins.
	if text, ok := metricsOf(ctx, b.c); ok {
		if v, ok := metricValue(text, `svcbridge_services{status="pending"}`); ok {
			return v
		}
	}
	return -1
}

// serverMetric reads one sample of the server's /metrics.
func (b *bench) serverMetric(ctx context.Context, name string) (float64, bool) {
	text, ok := b.serverMetrics(ctx)
	if !ok {
		return 0, false
	}
	return metricValue(text, name)
}

// serverMetrics is the text of the server's /metrics (Config.Metrics's
// when set), if it answers.
func (b *bench) serverMetrics(ctx context.Context) ([]byte, bool) {
	c := b.c
	if b.cfg.Metrics != "" {
		c = &client{server: strings.TrimRight(b.cfg.Metrics, "/"), token: c.token, http: c.http}
	}
	return metricsOf(ctx, c)
}

// metricsOf is the text of c's server's /metrics, if it answers.
func metricsOf(ctx context.Context, c *client) ([]byte, bool) {
	code, _, body, _, err := c.exchange(ctx, http.MethodGet, "/metrics", http.Header{"Accept": {"text/plain"}}, nil, nil)
	return body, err == nil && code == http.StatusOK
}

// fillCounter is a counter the fill is measured by, summed over the
// processes the server's /metrics shows.
type fillCounter int

const (
	statements fillCounter = iota
	transactions
	workflowTasks
	localActivities
	cacheMisses
)

// sdkMetricsFlush is how long the worker's SDK metrics may take to show
// in its /metrics (metrics.Temporal reports them every second).
const sdkMetricsFlush = 1500 * time.Millisecond

// fillCosts sets what each service of the step's fill cost, once the
// server is at rest after it: the counters' growth since the fill began
// (b.fillStart), per service filled. Nothing without a fill.
func (b *bench) fillCosts(ctx context.Context, r *ScaleStep) {
	before := b.fillStart
	b.fillStart = nil
	if before == nil || r.Filled == 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(sdkMetricsFlush):
	}
	after, ok := b.fillCounters(ctx)
	if !ok {
		return
	}
	per := func(c fillCounter) float64 { return round((after[c]-before[c])/float64(r.Filled), 1) }
	r.StatementsPerService, r.TransactionsPerService = per(statements), per(transactions)
	r.WorkflowTasksPerService, r.LocalActivitiesPerService = per(workflowTasks), per(localActivities)
	if tasks := after[workflowTasks] - before[workflowTasks]; tasks > 0 {
		r.CacheMissesPer1000Tasks = round(1000*(after[cacheMisses]-before[cacheMisses])/tasks, 1)
	}
}

// fillCounters reads every fillCounter (a missing one is 0), and whether
// the server's /metrics answered with its store's.
func (b *bench) fillCounters(ctx context.Context) (map[fillCounter]float64, bool) {
	text, ok := b.serverMetrics(ctx)
	if !ok {
		return nil, false
	}
	const service = `workflow_type="ServiceWorkflow"`
	out := map[fillCounter]float64{}
	var found bool
	out[statements], found = metricSum(text, "svcbridge_store_statements_total", "")
	out[transactions], _ = metricSum(text, "svcbridge_store_transactions_total", "")
	out[workflowTasks], _ = metricSum(text, "temporal_workflow_task_execution_latency_seconds_count", service)
	out[localActivities], _ = metricSum(text, "temporal_local_activity_total", service)
	out[cacheMisses], _ = metricSum(text, "temporal_sticky_cache_miss_total", service)
	return out, found
}

// rss is the server's resident memory in MiB: process_resident_memory_bytes
// of its /metrics, else, for an embedded server (this process), VmRSS of
// /proc/self/status; 0 and "" when neither answers.
func (b *bench) rss(ctx context.Context) (float64, string) {
	if v, ok := b.serverMetric(ctx, "process_resident_memory_bytes"); ok {
		return round(v/(1<<20), 1), "metrics"
	}
	if b.cfg.Embedded {
		if f, err := os.ReadFile("/proc/self/status"); err == nil {
			if kb, ok := procStatusKB(f, "VmRSS"); ok {
				return round(kb/1024, 1), "proc"
			}
		}
	}
	return 0, ""
}

// metricValue reads the sample name (with its labels, as exposed) of a
// Prometheus text exposition.
func metricValue(text []byte, name string) (float64, bool) {
	for sample, v := range samples(text) {
		if sample == name {
			return v, true
		}
	}
	return 0, false
}

// metricSum is the sum of metric name's samples whose labels include
// match (one per process, or per label set, in an exposition of several),
// and whether there was one.
func metricSum(text []byte, name, match string) (float64, bool) {
	found, sum := false, 0.0
	for sample, v := range samples(text) {
		if n, labels, _ := strings.Cut(sample, "{"); n == name && strings.Contains(labels, match) {
			found, sum = true, sum+v
		}
	}
	return sum, found
}

// metricMax is the largest value of metric name's samples whose labels
// include match, and whether there was one.
func metricMax(text []byte, name, match string) (float64, bool) {
	found, largest := false, 0.0
	for sample, v := range samples(text) {
		if n, labels, _ := strings.Cut(sample, "{"); n == name && strings.Contains(labels, match) && (!found || v > largest) {
			found, largest = true, v
		}
	}
	return largest, found
}

// samples yields each sample of a Prometheus text exposition: its name
// with its labels, as exposed, and its value.
func samples(text []byte) iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		sc := bufio.NewScanner(bytes.NewReader(text))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || strings.HasPrefix(f[0], "#") {
				continue
			}
			if v, err := strconv.ParseFloat(f[1], 64); err == nil && !yield(f[0], v) {
				return
			}
		}
	}
}

// procStatusKB reads a "Key:   123 kB" line of /proc/<pid>/status.
func procStatusKB(status []byte, key string) (float64, bool) {
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseFloat(f[0], 64)
		return n, err == nil
	}
	return 0, false
}
