package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// Bench scenarios, in the order "all" runs them.
var benchScenarios = []string{"create-latency", "concurrent-creates", "fanout", "tag-edits"}

// benchLong are the scenarios "all" leaves out, which run only when
// named: scale takes long, polls loads the server as nothing else does.
var benchLong = []string{"scale", "polls"}

const benchHelp = `Drive a svcbridge server through measured scenarios and print one JSON line of
figures per scenario. Without --server, bench starts an embedded svcbridge (store,
Temporal server, worker and API on loopback ports, files in a temporary directory)
and stops it afterwards, so it needs nothing running. It does not read
SVCBRIDGE_SERVER: pointing it at a server is always explicit.

Scenarios (--scenario, default all):

  create-latency      --n external services, one at a time: create -> ready, as
                      seen through the API.
  concurrent-creates  --n services created by --clients clients at once, each
                      until ready.
  fanout              --agents edge agents tagged with a run token; --n services
                      carrying it, created by --clients clients: create -> ready
                      and every agent's router holds the listener.
  tag-edits           --agents agents, half tagged token x, half token y; one
                      service per client, each edited --n/--clients times in turn
                      between tags [x] and [y]: edit -> the listeners are on
                      exactly the agents the tag rule selects.
  scale               not in all (it is long): grows the system to --n services
                      in --steps steps, and measures each step, the empty
                      system first (step 0). See below.
  polls               not in all: --agents edge agents acknowledge their changes;
                      then --clients clients send --n requests of each kind in
                      turn, on one HTTP client: GET /healthz, the agents'
                      unchanged polls GET /api/v3/agent/config/changes (no
                      change to report) and GET /api/v3/agent/router with
                      If-None-Match (304). One line: {"scenario", "n",
                      "clients", "agents", "healthz_per_s", "changes_per_s",
                      "router_304_per_s", "changes_ratio", "router_304_ratio"
                      (a poll's rate over /healthz's), "errors", "wall_s"}.

Outcomes are seen by one observer per scenario that lists the services (and, for
fanout and tag-edits, reads the agents' routers) every --poll: the load bench adds
to watch does not grow with --clients, so it does not distort what it measures.
A latency ends at the first observation that shows the outcome, so it is at most
--poll plus one observation late.

Each line: {"scenario", "n", "clients", "agents", "p50_ms", "p95_ms", "p99_ms",
"throughput_per_s", "errors", "lost_entries", "wall_s", "poll_ms"}. Latencies are
of the operations that succeeded; throughput is those per second of wall time; errors
counts operations that failed or timed out (--op-timeout); lost_entries comes from
a final consistency check after the run (given --settle to converge): every
created service ready with its listener on the hub router at its bridgePort;
fanout: every agent's router holds every listener; tag-edits: each agent's
listeners are exactly what the rule selects.

scale prints one line per step, as soon as the step is done: step 0 on the
system as it is, then steps 1..--steps, step k filling up to k*n/steps
services in all (counting those the server already had). A step's fill
creates external services with no tags (they select no agent: no fan-out)
on --clients clients (default 50 for scale), each POST as soon as the last
was answered, while one reader reads GET /api/v3/services?limit=500 every
50 ms; the fill ends when every service it created is ready (or failed):
the server's svcbridge_services{status="pending"} gauge is read every
max(--poll, 100ms) and the services listed once it is 0; or after
--ready-timeout with the rest counted pending. Then, once the server is at rest
(its process_cpu_seconds_total grew by less than a fifth of a core over a
second; at most 30 s, "rest_wait_s" in the line): --reads each of GET
/api/v3/services?limit=500, of the whole list, of the hub's router document
(GET /api/v3/agents/{hub}/router: 200, then with If-None-Match: <its ETag>,
which should be 304), and the server's RSS (process_resident_memory_bytes of
its /metrics; an embedded server is this process, so /proc/self/status when
/metrics does not answer); last, --samples services created one at a time,
create -> ready as create-latency measures it (they stay, and count toward
the next step). Each line: {"scenario", "step", "target", "services",
"clients", "filled", "fill_s", "fill_rate_per_s" (services ready per second
of fill), "post_rate_per_s" (POSTs answered per second), "post_p50_ms",
"post_p99_ms", "gets", "get_p50_ms", "get_p99_ms" (the reader's, during the
fill), "pending", "workflow_task_p999_ms" (the server's worker: the slowest
workflow type's p99.9 workflow task time, from its /metrics after the fill;
Temporal times a task out at 10 s), "rest_wait_s", "samples", "create_ready_p50_ms", "create_ready_p90_ms",
"list500_p50_ms", "list_all_p50_ms", "list_all_kb", "hub_agent",
"hub_doc_ms", "hub_doc_kb", "hub_doc_304_ms", "hub_304", "hub_note" (why a
hub figure is missing, e.g. no hub agent), "rss_mb" (MiB), "rss_from"
("metrics" or "proc"), "errors", "wall_s"}; "services" is how many the whole
list held. Against --server, deleting a large --n at the end takes a while.

Every object bench creates is named bench-<run>-..., and deleted at the end
(scale leaves an embedded server's: it is discarded whole). The server needs a
default router (hub), except for scale, which says in its lines when there is
none; an embedded server gets one. The exit code is 1 when any scenario had
errors or lost entries (scale: errors or services still pending).`

type benchConfig struct {
	server    string
	scenario  string
	n         int
	clients   int
	agents    int
	opTimeout time.Duration
	poll      time.Duration
	settle    time.Duration
	tagPrefix string
	token     string

	// scale
	steps        int
	samples      int
	reads        int
	readyTimeout time.Duration
}

// BenchResult is one scenario's figures, one JSON line.
type BenchResult struct {
	Scenario    string  `json:"scenario"`
	N           int     `json:"n"`
	Clients     int     `json:"clients"`
	Agents      int     `json:"agents,omitempty"`
	P50         float64 `json:"p50_ms"`
	P95         float64 `json:"p95_ms"`
	P99         float64 `json:"p99_ms"`
	Throughput  float64 `json:"throughput_per_s"`
	Errors      int     `json:"errors"`
	LostEntries int     `json:"lost_entries"`
	WallS       float64 `json:"wall_s"`
	PollMS      float64 `json:"poll_ms"`
}

func benchCmd(o Options) *cobra.Command {
	var cfg benchConfig
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Measure a svcbridge server (or an embedded one): latency, throughput, fan-out, tag edits",
		Long:    benchHelp + "\n" + exitCodesHelp,
		Example: "  svcbridge bench\n  svcbridge bench --scenario fanout --n 50 --agents 100\n  svcbridge bench --server http://127.0.0.1:8080 --scenario create-latency --n 20\n  svcbridge bench --scenario scale --n 10000",
		Args:    cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, o, cfg)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&cfg.server, "server", "", "svcbridge API URL to measure (default: start an embedded svcbridge)")
	f.StringVar(&cfg.token, "token", "", "bearer token for --server (env SVCBRIDGE_TOKEN)")
	f.StringVar(&cfg.scenario, "scenario", "all", "all (which leaves out "+strings.Join(benchLong, ", ")+"), or one of "+strings.Join(append(slices.Clone(benchScenarios), benchLong...), ", "))
	f.IntVar(&cfg.n, "n", 100, "services (create-latency, concurrent-creates, fanout; scale: in all at the last step) or tag edits (tag-edits)")
	f.IntVar(&cfg.clients, "clients", 10, "concurrent clients (scale: 50 unless set)")
	f.IntVar(&cfg.agents, "agents", 10, "agents for fanout and tag-edits")
	f.DurationVar(&cfg.opTimeout, "op-timeout", time.Minute, "how long one operation may take before it counts as an error")
	f.DurationVar(&cfg.poll, "poll", 5*time.Millisecond, "how often an operation's outcome is polled")
	f.DurationVar(&cfg.settle, "settle", 15*time.Second, "how long the final consistency check waits for convergence")
	f.StringVar(&cfg.tagPrefix, "tag-prefix", "service.iofog.org/tag", "the server's SERVICE_ANNOTATION_TAG")
	f.IntVar(&cfg.steps, "steps", 4, "scale: steps after the empty system (step 0)")
	f.IntVar(&cfg.samples, "samples", 20, "scale: one-at-a-time creates timed create -> ready per step (0: none)")
	f.IntVar(&cfg.reads, "reads", 5, "scale: timed reads per step of each list and of the hub's router document")
	f.DurationVar(&cfg.readyTimeout, "ready-timeout", 10*time.Minute, "scale: how long a fill waits, after its last create, for every service to be ready")
	cmd.RegisterFlagCompletionFunc("scenario", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return append(append([]string{"all"}, benchScenarios...), benchLong...), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runBench(cmd *cobra.Command, o Options, cfg benchConfig) error {
	scenarios := benchScenarios
	if cfg.scenario != "all" {
		if !slices.Contains(benchScenarios, cfg.scenario) && !slices.Contains(benchLong, cfg.scenario) {
			return fmt.Errorf("invalid --scenario %q: want all or one of %s", cfg.scenario, strings.Join(append(slices.Clone(benchScenarios), benchLong...), ", "))
		}
		scenarios = []string{cfg.scenario}
	}
	if cfg.scenario == "scale" && !cmd.Flags().Changed("clients") {
		cfg.clients = 50
	}
	if cfg.n < 1 || cfg.clients < 1 || cfg.agents < 1 {
		return errors.New("--n, --clients and --agents must be at least 1")
	}
	if cfg.steps < 1 || cfg.reads < 1 || cfg.samples < 0 {
		return errors.New("--steps and --reads must be at least 1, --samples at least 0")
	}
	if cfg.poll <= 0 {
		cfg.poll = 5 * time.Millisecond
	}
	ctx := cmd.Context()
	errOut := cmd.ErrOrStderr()
	embedded := cfg.server == ""
	server := cfg.server
	if embedded {
		if o.Embedded == nil {
			return errors.New("bench needs --server (this build cannot start an embedded svcbridge)")
		}
		fmt.Fprintln(errOut, "bench: starting an embedded svcbridge...")
		e, err := o.Embedded(ctx, cmd)
		if err != nil {
			return fmt.Errorf("start the embedded svcbridge: %w", err)
		}
		defer e.Stop()
		server, cfg.token = e.Server, e.Token
		fmt.Fprintln(errOut, "bench: embedded svcbridge at", server)
	}
	server, err := normalizeServer(server)
	if err != nil {
		return err
	}
	token := cfg.token
	if token == "" && !embedded {
		token = strings.TrimSpace(os.Getenv("SVCBRIDGE_TOKEN"))
	}
	b := &bench{c: &Client{Server: server, Token: token}, cfg: cfg, run: runID(), errOut: errOut, embedded: embedded}
	if err := b.setup(ctx, embedded, !slices.Contains(benchLong, cfg.scenario)); err != nil {
		return err
	}
	defer b.teardown()
	enc := json.NewEncoder(cmd.OutOrStdout())
	var bad []string
	for _, sc := range scenarios {
		if sc == "polls" {
			errs, err := b.polls(ctx, enc)
			if err != nil {
				return fmt.Errorf("bench %s: %w", sc, err)
			}
			if errs > 0 {
				bad = append(bad, fmt.Sprintf("%s: %s", sc, plural(errs, "error", "errors")))
			}
			continue
		}
		if sc == "scale" {
			problems, err := b.scale(ctx, enc)
			if err != nil {
				return fmt.Errorf("bench %s: %w", sc, err)
			}
			bad = append(bad, problems...)
			continue
		}
		r, err := b.scenario(ctx, sc)
		if err != nil {
			return fmt.Errorf("bench %s: %w", sc, err)
		}
		r.PollMS = round(float64(cfg.poll.Microseconds())/1000, 3)
		if err := enc.Encode(r); err != nil {
			return err
		}
		if r.Errors > 0 || r.LostEntries > 0 {
			bad = append(bad, fmt.Sprintf("%s: %s, %s", sc, plural(r.Errors, "error", "errors"), plural(r.LostEntries, "lost entry", "lost entries")))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench found problems: %s", strings.Join(bad, "; "))
	}
	return nil
}

func runID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// bench runs scenarios against one server.
type bench struct {
	c      *Client
	cfg    benchConfig
	run    string
	errOut io.Writer
	hub    Agent
	ownHub bool
	// embedded: the server is this process's, discarded at the end.
	embedded bool
	// keepHub: teardown leaves the hub (its server is discarded anyway).
	keepHub bool

	mu       sync.Mutex
	reported int
}

// setup finds the hub, creating one on an embedded server. Without
// needHub, a server with no default router is measured as it is (b.hub
// stays empty).
func (b *bench) setup(ctx context.Context, embedded, needHub bool) error {
	agents, err := b.c.ListAgents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if a.DefaultRouter {
			b.hub = a
			return nil
		}
	}
	if !embedded && !needHub {
		fmt.Fprintln(b.errOut, "bench: the server has no default router (hub): measuring it as it is")
		return nil
	}
	if !embedded {
		return errors.New("the server has no default router (hub); bench needs one: create an agent with defaultRouter: true and routerMode interior")
	}
	b.hub, err = b.c.CreateAgent(ctx, map[string]any{"name": "bench-" + b.run + "-hub", "routerMode": "interior",
		"defaultRouter": true, "host": "bench-hub.example.com"})
	b.ownHub = err == nil
	return err
}

func (b *bench) teardown() {
	if !b.ownHub || b.keepHub {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.c.DeleteAgent(ctx, b.hub.UUID); err != nil {
		fmt.Fprintf(b.errOut, "bench: could not delete %s: %v\n", b.hub.Name, err)
	}
}

// opError reports an operation's error (the first few of each scenario).
func (b *bench) opError(scenario string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reported++
	if b.reported <= 5 {
		fmt.Fprintf(b.errOut, "bench: %s: %v\n", scenario, err)
	}
}

func (b *bench) scenario(ctx context.Context, name string) (BenchResult, error) {
	b.mu.Lock()
	b.reported = 0
	b.mu.Unlock()
	switch name {
	case "create-latency":
		return b.creates(ctx, name, "l", 1)
	case "concurrent-creates":
		return b.creates(ctx, name, "c", b.cfg.clients)
	case "fanout":
		return b.fanout(ctx)
	}
	return b.tagEdits(ctx)
}

// latencies collects the outcome of operations.
type latencies struct {
	mu     sync.Mutex
	ok     []time.Duration
	errors int
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors++
		return
	}
	l.ok = append(l.ok, d)
}

func (l *latencies) result(scenario string, n, clients, agents int, wall time.Duration, lost int) BenchResult {
	r := BenchResult{Scenario: scenario, N: n, Clients: clients, Agents: agents, Errors: l.errors,
		LostEntries: lost, WallS: round(wall.Seconds(), 3)}
	if len(l.ok) > 0 {
		slices.Sort(l.ok)
		r.P50, r.P95, r.P99 = percentile(l.ok, 0.50), percentile(l.ok, 0.95), percentile(l.ok, 0.99)
		r.Throughput = round(float64(len(l.ok))/wall.Seconds(), 2)
	}
	return r
}

// percentile of sorted d (nearest rank), in ms.
func percentile(d []time.Duration, p float64) float64 {
	i := int(float64(len(d))*p+0.999999) - 1
	i = max(0, min(i, len(d)-1))
	return round(float64(d[i].Microseconds())/1000, 1)
}

func round(f float64, digits int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', digits, 64), 64)
	return v
}

// parallel runs do(i) for i in [0, n) on clients goroutines.
func parallel(ctx context.Context, n, clients int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(clients, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

func (b *bench) serviceName(kind string, i int) string {
	return fmt.Sprintf("bench-%s-%s%05d", b.run, kind, i)
}

func externalService(name string, tags []string) map[string]any {
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"name": name, "type": "external", "resource": "203.0.113.10", "targetPort": 443, "tags": tags}
}

// snapshot is what the observer read in one round: every service, and the
// listeners of the observed agents' routers (agent uuid -> listener name ->
// port).
type snapshot struct {
	started   time.Time
	services  map[string]Service
	listeners map[string]map[string]string
	err       error
}

// ready reports whether name's latest generation is ready; failed is an
// error.
func (s *snapshot) ready(name string) (Service, bool, error) {
	svc, ok := s.services[name]
	if !ok || !svc.Settled() {
		return svc, false, nil
	}
	if svc.ProvisioningStatus == "failed" {
		return svc, false, &FailedError{Service: name, Message: svc.ErrorText()}
	}
	return svc, svc.ProvisioningStatus == "ready", nil
}

// listening reports whether agent's router holds svc's listener at its
// bridge port.
func (s *snapshot) listening(agent string, svc Service) bool {
	port, ok := s.listeners[agent][svc.Name+"-listener"]
	return ok && port == strconv.Itoa(svc.BridgePort)
}

// observer reads the server's state in rounds, every --poll, for all the
// operations of a scenario at once: each round reads the services being
// waited for (one GET each) and the observed agents' routers, so the load
// it adds is one round per --poll however many clients wait, and does not
// distort what it measures.
type observer struct {
	c        *Client
	interval time.Duration
	agents   []string
	mu       sync.Mutex
	watched  map[string]int // service name -> operations waiting for it
	cur      *snapshot
	next     chan struct{} // closed when a newer snapshot is in
	cancel   context.CancelFunc
	done     chan struct{}
}

// observe starts an observer of the services and of agents' routers.
func (b *bench) observe(ctx context.Context, agents []Agent) *observer {
	octx, cancel := context.WithCancel(ctx)
	o := &observer{c: b.c, interval: b.cfg.poll, agents: uuids(agents), watched: map[string]int{},
		next: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go o.loop(octx)
	return o
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}

func (o *observer) loop(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		s := o.read(ctx)
		o.mu.Lock()
		o.cur = s
		close(o.next)
		o.next = make(chan struct{})
		o.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(o.interval):
		}
	}
}

func (o *observer) read(ctx context.Context) *snapshot {
	s := &snapshot{started: time.Now(), services: map[string]Service{}, listeners: map[string]map[string]string{}}
	o.mu.Lock()
	names := make([]string, 0, len(o.watched))
	for name := range o.watched {
		names = append(names, name)
	}
	o.mu.Unlock()
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		s.err = err
		mu.Unlock()
	}
	parallel(ctx, len(names)+len(o.agents), 8, func(i int) {
		if i < len(names) {
			svc, err := o.c.GetService(ctx, names[i])
			switch {
			case NotFound(err):
			case err != nil:
				fail(err)
			default:
				mu.Lock()
				s.services[names[i]] = svc
				mu.Unlock()
			}
			return
		}
		agent := o.agents[i-len(names)]
		rc, err := o.c.AgentRouter(ctx, agent)
		if err != nil && !NotFound(err) {
			fail(err)
			return
		}
		ports := make(map[string]string, len(rc.Bridges.TCPListeners))
		for name, l := range rc.Bridges.TCPListeners {
			ports[name] = l.Port
		}
		mu.Lock()
		s.listeners[agent] = ports
		mu.Unlock()
	})
	return s
}

// waitFor waits until cond holds on a complete snapshot (that read name)
// started after since, cond fails, or the operation times out.
func (o *observer) waitFor(ctx context.Context, name string, since time.Time, timeout time.Duration, what string, cond func(*snapshot) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	o.mu.Lock()
	o.watched[name]++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		if o.watched[name]--; o.watched[name] <= 0 {
			delete(o.watched, name)
		}
		o.mu.Unlock()
	}()
	var lastErr error
	for {
		o.mu.Lock()
		s, next := o.cur, o.next
		o.mu.Unlock()
		if s != nil && s.started.After(since) {
			if s.err != nil {
				lastErr = s.err
			} else if ok, err := cond(s); ok || err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%s: not done within %s (last read: %v)", what, timeout, lastErr)
			}
			return fmt.Errorf("%s: not done within %s", what, timeout)
		case <-next:
		}
	}
}

// readyCond is true once name's latest generation is ready.
func readyCond(name string) func(*snapshot) (bool, error) {
	return func(s *snapshot) (bool, error) {
		_, ok, err := s.ready(name)
		return ok, err
	}
}

// creates is create-latency (clients 1) and concurrent-creates.
func (b *bench) creates(ctx context.Context, scenario, kind string, clients int) (BenchResult, error) {
	n := b.cfg.n
	names := make([]string, n)
	for i := range names {
		names[i] = b.serviceName(kind, i)
	}
	lat, mine, wall := b.createUntilReady(ctx, scenario, names, clients)
	lost := b.settle(ctx, func(ctx context.Context) (int, error) { return b.lostOnHub(ctx, mine) })
	b.cleanup(mine, []string{b.hub.UUID}, nil)
	return lat.result(scenario, n, clients, 0, wall, lost), ctx.Err()
}

// createUntilReady creates the external services names on clients
// clients, each until it is ready, and returns each one's create -> ready,
// those that were created, and the wall time.
func (b *bench) createUntilReady(ctx context.Context, scenario string, names []string, clients int) (*latencies, []string, time.Duration) {
	n := len(names)
	var lat latencies
	created := make([]bool, n)
	obs := b.observe(ctx, nil)
	start := time.Now()
	parallel(ctx, n, clients, func(i int) {
		t0 := time.Now()
		_, err := b.c.CreateService(ctx, externalService(names[i], nil))
		if err == nil {
			created[i] = true
			err = obs.waitFor(ctx, names[i], t0, b.cfg.opTimeout, names[i]+" ready", readyCond(names[i]))
		}
		if err != nil {
			b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
		}
		lat.add(time.Since(t0), err)
	})
	wall := time.Since(start)
	obs.stop()
	var mine []string
	for i, ok := range created {
		if ok {
			mine = append(mine, names[i])
		}
	}
	return &lat, mine, wall
}

// settle runs a consistency check until it finds nothing lost or --settle
// passes, and returns the last count.
func (b *bench) settle(ctx context.Context, check func(context.Context) (int, error)) int {
	deadline := time.Now().Add(b.cfg.settle)
	for {
		lost, err := check(ctx)
		if err != nil {
			b.opError("consistency check", err)
		}
		if (lost == 0 && err == nil) || time.Now().After(deadline) || ctx.Err() != nil {
			return lost
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lostOnHub counts services that are not ready, or whose listener is not
// on the hub router at their bridge port.
func (b *bench) lostOnHub(ctx context.Context, names []string) (int, error) {
	if len(names) == 0 {
		return 0, nil
	}
	rc, err := b.c.AgentRouter(ctx, b.hub.UUID)
	if err != nil {
		return len(names), err
	}
	lost := 0
	for _, name := range names {
		s, err := b.c.GetService(ctx, name)
		if err != nil {
			lost++
			continue
		}
		l, ok := rc.Bridges.TCPListeners[name+"-listener"]
		if !s.Settled() || s.ProvisioningStatus != "ready" || !ok || l.Port != strconv.Itoa(s.BridgePort) {
			lost++
		}
	}
	return lost, nil
}

// createAgents creates count edge agents; tag(i) gives agent i's tags.
func (b *bench) createAgents(ctx context.Context, scenario string, count int, tag func(i int) []string) ([]Agent, error) {
	agents := make([]Agent, count)
	var firstErr error
	var mu sync.Mutex
	parallel(ctx, count, 8, func(i int) {
		a, err := b.c.CreateAgent(ctx, map[string]any{"name": fmt.Sprintf("bench-%s-%s-a%04d", b.run, scenario[:3], i),
			"routerMode": "edge", "tags": tag(i)})
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		agents[i] = a
	})
	if firstErr != nil {
		b.cleanup(nil, nil, agents)
		return nil, fmt.Errorf("create the agents: %w", firstErr)
	}
	return agents, nil
}

func (b *bench) fanout(ctx context.Context) (BenchResult, error) {
	const scenario = "fanout"
	token := "bench-" + b.run + "-f"
	agents, err := b.createAgents(ctx, scenario, b.cfg.agents, func(int) []string { return []string{b.cfg.tagPrefix + ": " + token} })
	if err != nil {
		return BenchResult{}, err
	}
	n := b.cfg.n
	var lat latencies
	created := make([]bool, n)
	names := make([]string, n)
	obs := b.observe(ctx, agents)
	start := time.Now()
	parallel(ctx, n, b.cfg.clients, func(i int) {
		names[i] = b.serviceName("f", i)
		t0 := time.Now()
		_, err := b.c.CreateService(ctx, externalService(names[i], []string{token}))
		if err == nil {
			created[i] = true
			err = obs.waitFor(ctx, names[i], t0, b.cfg.opTimeout, names[i]+" on every agent", func(s *snapshot) (bool, error) {
				svc, ok, err := s.ready(names[i])
				if !ok || err != nil {
					return false, err
				}
				for _, a := range agents {
					if !s.listening(a.UUID, svc) {
						return false, nil
					}
				}
				return true, nil
			})
		}
		if err != nil {
			b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
		}
		lat.add(time.Since(t0), err)
	})
	wall := time.Since(start)
	obs.stop()
	var mine []string
	for i, ok := range created {
		if ok {
			mine = append(mine, names[i])
		}
	}
	lost := b.settle(ctx, func(ctx context.Context) (int, error) {
		want := map[string]map[string]bool{} // agent uuid -> services
		for _, a := range agents {
			want[a.UUID] = map[string]bool{}
			for _, name := range mine {
				want[a.UUID][name] = true
			}
		}
		return b.lostOnAgents(ctx, agents, mine, want)
	})
	b.cleanup(mine, append([]string{b.hub.UUID}, uuids(agents)...), agents)
	return lat.result(scenario, n, b.cfg.clients, len(agents), wall, lost), ctx.Err()
}

func uuids(agents []Agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.UUID
	}
	return out
}

// lostOnAgents compares each agent's listeners among names with want
// (agent uuid -> services): a missing listener, one at the wrong port, or
// one that should be gone is a lost entry.
func (b *bench) lostOnAgents(ctx context.Context, agents []Agent, names []string, want map[string]map[string]bool) (int, error) {
	ports := map[string]string{}
	for _, name := range names {
		s, err := b.c.GetService(ctx, name)
		if err != nil {
			return len(names) * len(agents), err
		}
		ports[name] = strconv.Itoa(s.BridgePort)
	}
	lost := 0
	for _, a := range agents {
		rc, err := b.c.AgentRouter(ctx, a.UUID)
		if err != nil && !NotFound(err) {
			return len(names) * len(agents), err
		}
		for _, name := range names {
			l, has := rc.Bridges.TCPListeners[name+"-listener"]
			wanted := want[a.UUID][name]
			if wanted != has || (has && l.Port != ports[name]) {
				lost++
			}
		}
	}
	return lost, nil
}

func (b *bench) tagEdits(ctx context.Context) (BenchResult, error) {
	const scenario = "tag-edits"
	x, y := "bench-"+b.run+"-x", "bench-"+b.run+"-y"
	count := max(2, b.cfg.agents)
	tokenOf := func(i int) string {
		if i%2 == 0 {
			return x
		}
		return y
	}
	agents, err := b.createAgents(ctx, scenario, count, func(i int) []string { return []string{b.cfg.tagPrefix + ": " + tokenOf(i)} })
	if err != nil {
		return BenchResult{}, err
	}
	holders := map[string][]string{} // token -> agent uuids
	for i, a := range agents {
		holders[tokenOf(i)] = append(holders[tokenOf(i)], a.UUID)
	}
	// matches: exactly the agents holding token listen for name.
	matches := func(name, token string) func(*snapshot) (bool, error) {
		return func(s *snapshot) (bool, error) {
			svc, ok, err := s.ready(name)
			if !ok || err != nil {
				return false, err
			}
			for _, a := range agents {
				if s.listening(a.UUID, svc) != slices.Contains(holders[token], a.UUID) {
					return false, nil
				}
			}
			return true, nil
		}
	}
	obs := b.observe(ctx, agents)
	defer obs.stop()
	services := min(b.cfg.clients, b.cfg.n)
	names := make([]string, services)
	current := make([]string, services) // each service's token
	var setupErr error
	var mu sync.Mutex
	var mine []string
	parallel(ctx, services, services, func(i int) {
		names[i], current[i] = b.serviceName("e", i), x
		t0 := time.Now()
		_, err := b.c.CreateService(ctx, externalService(names[i], []string{x}))
		if err == nil {
			mu.Lock()
			mine = append(mine, names[i])
			mu.Unlock()
			err = obs.waitFor(ctx, names[i], t0, b.cfg.opTimeout, names[i]+" on the x agents", matches(names[i], x))
		}
		if err != nil {
			mu.Lock()
			setupErr = cmpErr(setupErr, fmt.Errorf("set up %s: %w", names[i], err))
			mu.Unlock()
		}
	})
	sort.Strings(mine)
	all := append([]string{b.hub.UUID}, uuids(agents)...)
	if setupErr != nil {
		b.cleanup(mine, all, agents)
		return BenchResult{}, setupErr
	}
	// Edit k goes to service k % services: each service's edits are
	// sequential, the services' edits run side by side.
	var lat latencies
	start := time.Now()
	parallel(ctx, services, services, func(i int) {
		for k := i; k < b.cfg.n; k += services {
			next := x
			if current[i] == x {
				next = y
			}
			t0 := time.Now()
			err := b.c.PatchService(ctx, names[i], map[string]any{"tags": []string{next}})
			if err == nil {
				current[i] = next
				err = obs.waitFor(ctx, names[i], t0, b.cfg.opTimeout, names[i]+" on the "+next+" agents", matches(names[i], next))
			}
			if err != nil {
				b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
			}
			lat.add(time.Since(t0), err)
		}
	})
	wall := time.Since(start)
	obs.stop()
	lost := b.settle(ctx, func(ctx context.Context) (int, error) {
		want := map[string]map[string]bool{}
		for _, a := range agents {
			want[a.UUID] = map[string]bool{}
		}
		for i, name := range names {
			for _, uuid := range holders[current[i]] {
				want[uuid][name] = true
			}
		}
		return b.lostOnAgents(ctx, agents, names, want)
	})
	b.cleanup(mine, all, agents)
	return lat.result(scenario, b.cfg.n, services, len(agents), wall, lost), ctx.Err()
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

// cleanup deletes the services, waits (bounded) until the routers no
// longer hold them, then deletes the agents. It runs even when ctx ended.
func (b *bench) cleanup(services []string, routers []string, agents []Agent) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(len(services))*100*time.Millisecond)
	defer cancel()
	parallel(ctx, len(services), 8, func(i int) {
		if err := b.c.DeleteService(ctx, services[i]); err != nil && !NotFound(err) {
			b.opError("cleanup", err)
		}
	})
	if len(services) > 0 {
		deadline := time.Now().Add(b.cfg.opTimeout)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			left := 0
			for _, r := range routers {
				rc, err := b.c.AgentRouter(ctx, r)
				if err != nil {
					continue
				}
				for _, s := range services {
					if _, ok := rc.Bridges.TCPListeners[s+"-listener"]; ok {
						left++
					}
					if _, ok := rc.Bridges.TCPConnectors[s+"-connector"]; ok {
						left++
					}
				}
			}
			if left == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	parallel(ctx, len(agents), 8, func(i int) {
		if agents[i].UUID == "" {
			return
		}
		if err := b.c.DeleteAgent(ctx, agents[i].UUID); err != nil && !NotFound(err) {
			b.opError("cleanup", err)
		}
	})
}
