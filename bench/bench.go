// Package bench measures a svcbridge server through its REST API: the
// scenarios of `svcbridge bench` (create -> ready, concurrent creates,
// fan-out, tag edits, scale, polls), each printed as JSON lines, and the
// latency recording (Latencies) the system tests' benchmarks share.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scenarios are the scenarios "all" runs, in its order.
var Scenarios = []string{"create-latency", "concurrent-creates", "fanout", "tag-edits"}

// Long are the scenarios "all" leaves out, which run only when named:
// scale takes long, polls loads the server as nothing else does.
var Long = []string{"scale", "polls"}

// Config is what a run measures and how; the `svcbridge bench` command's
// flags, checked by the command.
type Config struct {
	// Server is the API's base URL; Token, when set, its bearer token.
	Server, Token string
	// Metrics, when set, is the base URL whose /metrics the figures read
	// instead of Server's: one that joins several processes' (the
	// production bench's, scripts/prodbench).
	Metrics string
	// Embedded: the server is this process's, discarded at the end (its
	// hub is created when missing, and left).
	Embedded bool
	// Scenario is "all" or one of Scenarios and Long.
	Scenario  string
	N         int
	Clients   int
	Agents    int
	OpTimeout time.Duration
	Poll      time.Duration
	Settle    time.Duration
	TagPrefix string

	// scale
	Steps        int
	Samples      int
	Reads        int
	ReadyTimeout time.Duration
	// NoFillReader leaves out the reader that lists a page of services
	// while a fill runs (a dashboard's load): the fill's cost is then the
	// services' own.
	NoFillReader bool
	// RestWindow is how long the server must stay at rest after a fill
	// before the reads at rest are measured (see waitAtRest); zero is a
	// second.
	RestWindow time.Duration
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

// Run measures cfg's scenarios, writing each one's JSON line (scale: each
// step's) to out as it ends, and progress and operations' errors to
// errOut. Its error says what failed to run, or the problems the
// scenarios found (errors, lost entries, services still pending).
func Run(ctx context.Context, cfg Config, out, errOut io.Writer) error {
	scenarios := Scenarios
	if cfg.Scenario != "all" {
		scenarios = []string{cfg.Scenario}
	}
	// The clients need a kept-alive connection each, and the observer its
	// 8: the default transport keeps 2 per host and would open a new one
	// for most requests, costing the server (and an embedded one's
	// process, which the bench shares) more than some requests do.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = cfg.Clients + 8
	defer t.CloseIdleConnections()
	hc := &http.Client{Timeout: requestTimeout, Transport: t}
	b := &bench{c: &client{server: strings.TrimRight(cfg.Server, "/"), token: cfg.Token, http: hc},
		cfg: cfg, run: runID(), errOut: errOut}
	if err := b.setup(ctx, !slices.Contains(Long, cfg.Scenario)); err != nil {
		return err
	}
	defer b.teardown()
	enc := json.NewEncoder(out)
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
		r.PollMS = round(float64(cfg.Poll.Microseconds())/1000, 3)
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

// requestTimeout bounds every request but polls'.
const requestTimeout = 30 * time.Second

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func runID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// bench runs scenarios against one server.
type bench struct {
	c      *client
	cfg    Config
	run    string
	errOut io.Writer
	hub    agent
	ownHub bool
	// keepHub: teardown leaves the hub (its server is discarded anyway).
	keepHub bool
	// fillStart is the scale scenario's counters when the step's fill
	// began (fillCosts).
	fillStart map[fillCounter]float64

	mu       sync.Mutex
	reported int
}

// setup finds the hub, creating one on an embedded server. Without
// needHub, a server with no default router is measured as it is (b.hub
// stays empty).
func (b *bench) setup(ctx context.Context, needHub bool) error {
	agents, err := b.c.listAgents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if a.DefaultRouter {
			b.hub = a
			return nil
		}
	}
	if !b.cfg.Embedded && !needHub {
		fmt.Fprintln(b.errOut, "bench: the server has no default router (hub): measuring it as it is")
		return nil
	}
	if !b.cfg.Embedded {
		return errors.New("the server has no default router (hub); bench needs one: create an agent with defaultRouter: true and routerMode interior")
	}
	b.hub, err = b.c.createAgent(ctx, map[string]any{"name": "bench-" + b.run + "-hub", "routerMode": "interior",
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
	if err := b.c.deleteAgent(ctx, b.hub.UUID); err != nil {
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
		return b.creates(ctx, name, "c", b.cfg.Clients)
	case "fanout":
		return b.fanout(ctx)
	}
	return b.tagEdits(ctx)
}

// Parallel runs do(i) for i in [0, n) on clients goroutines, until ctx
// ends.
func Parallel(ctx context.Context, n, clients int, do func(i int)) {
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

// serviceNames are count names of kind, numbered from first.
func (b *bench) serviceNames(kind string, first, count int) []string {
	names := make([]string, count)
	for i := range names {
		names[i] = b.serviceName(kind, first+i)
	}
	return names
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
	services  map[string]service
	listeners map[string]map[string]string
	err       error
}

// ready reports whether name's latest generation is ready; failed is an
// error.
func (s *snapshot) ready(name string) (service, bool, error) {
	svc, ok := s.services[name]
	if !ok {
		return svc, false, nil
	}
	ready, err := svc.ready()
	return svc, ready, err
}

// listening reports whether agent's router holds svc's listener at its
// bridge port.
func (s *snapshot) listening(agent string, svc service) bool {
	port, ok := s.listeners[agent][svc.Name+"-listener"]
	return ok && port == strconv.Itoa(svc.BridgePort)
}

// observer reads the server's state in rounds, every --poll, for all the
// operations of a scenario at once: each round reads the services being
// waited for (one GET each) and the observed agents' routers, so the load
// it adds is one round per --poll however many clients wait, and does not
// distort what it measures.
type observer struct {
	c        *client
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
func (b *bench) observe(ctx context.Context, agents []agent) *observer {
	octx, cancel := context.WithCancel(ctx)
	o := &observer{c: b.c, interval: b.cfg.Poll, agents: uuids(agents), watched: map[string]int{},
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
	s := &snapshot{started: time.Now(), services: map[string]service{}, listeners: map[string]map[string]string{}}
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
	Parallel(ctx, len(names)+len(o.agents), 8, func(i int) {
		if i < len(names) {
			svc, err := o.c.getService(ctx, names[i])
			switch {
			case notFound(err):
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
		rc, err := o.c.agentRouter(ctx, agent)
		if err != nil && !notFound(err) {
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

// creates is create-latency (clients 1) and concurrent-creates.
func (b *bench) creates(ctx context.Context, scenario, kind string, clients int) (BenchResult, error) {
	n := b.cfg.N
	names := b.serviceNames(kind, 0, n)
	lat, mine, wall := b.createUntilReady(ctx, scenario, names, clients)
	lost := b.settle(ctx, func(ctx context.Context) (int, error) { return b.lostOnHub(ctx, mine) })
	b.cleanup(mine, []string{b.hub.UUID}, nil)
	return lat.result(scenario, n, clients, 0, wall, lost), ctx.Err()
}

// createUntilReady creates the external services names on clients
// clients, each until it is ready, as a client waits for one (a long poll
// of the service), and returns each one's create -> ready, those that
// were created, and the wall time.
func (b *bench) createUntilReady(ctx context.Context, scenario string, names []string, clients int) (*Latencies, []string, time.Duration) {
	return b.createUntil(ctx, scenario, names, nil, clients, func(name string, _ time.Time) error {
		return b.awaitReady(ctx, name)
	})
}

// awaitReady waits until name's latest generation is ready (failed is an
// error) or --op-timeout passes: a long poll of the service, answered as
// it changes; against a server without long polls, a read every --poll.
func (b *bench) awaitReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.OpTimeout)
	defer cancel()
	var etag string
	var lastErr error
	for {
		svc, next, changed, err := b.c.awaitService(ctx, name, etag)
		switch {
		case ctx.Err() != nil:
			if lastErr != nil {
				return fmt.Errorf("%s ready: not done within %s (last read: %v)", name, b.cfg.OpTimeout, lastErr)
			}
			return fmt.Errorf("%s ready: not done within %s", name, b.cfg.OpTimeout)
		case err != nil:
			lastErr = err
		case changed:
			if ok, err := svc.ready(); ok || err != nil {
				return err
			}
		}
		if next == "" { // nothing to wait on: read again after --poll
			select {
			case <-ctx.Done():
			case <-time.After(b.cfg.Poll):
			}
		}
		etag = next
	}
}

// createUntil creates the external services names tagged tags on clients
// clients, each until wait(name, its create's start) returns, and returns
// each one's create -> done, those that were created, and the wall time.
func (b *bench) createUntil(ctx context.Context, scenario string, names, tags []string, clients int, wait func(name string, t0 time.Time) error) (*Latencies, []string, time.Duration) {
	n := len(names)
	var lat Latencies
	created := make([]bool, n)
	start := time.Now()
	Parallel(ctx, n, clients, func(i int) {
		t0 := time.Now()
		err := b.c.createService(ctx, externalService(names[i], tags))
		if err == nil {
			created[i] = true
			err = wait(names[i], t0)
		}
		if err != nil {
			b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
		}
		lat.Add(time.Since(t0), err)
	})
	wall := time.Since(start)
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
	deadline := time.Now().Add(b.cfg.Settle)
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
	rc, err := b.c.agentRouter(ctx, b.hub.UUID)
	if err != nil {
		return len(names), err
	}
	lost := 0
	for _, name := range names {
		s, err := b.c.getService(ctx, name)
		if err != nil {
			lost++
			continue
		}
		l, ok := rc.Bridges.TCPListeners[name+"-listener"]
		if !s.settled() || s.ProvisioningStatus != "ready" || !ok || l.Port != strconv.Itoa(s.BridgePort) {
			lost++
		}
	}
	return lost, nil
}

// createAgents creates count edge agents; tag(i) gives agent i's tags.
func (b *bench) createAgents(ctx context.Context, scenario string, count int, tag func(i int) []string) ([]agent, error) {
	agents := make([]agent, count)
	var firstErr error
	var mu sync.Mutex
	Parallel(ctx, count, 8, func(i int) {
		a, err := b.c.createAgent(ctx, map[string]any{"name": fmt.Sprintf("bench-%s-%s-a%04d", b.run, scenario[:3], i),
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
	agents, err := b.createAgents(ctx, scenario, b.cfg.Agents, func(int) []string { return []string{b.cfg.TagPrefix + ": " + token} })
	if err != nil {
		return BenchResult{}, err
	}
	n := b.cfg.N
	names := b.serviceNames("f", 0, n)
	obs := b.observe(ctx, agents)
	lat, mine, wall := b.createUntil(ctx, scenario, names, []string{token}, b.cfg.Clients, func(name string, t0 time.Time) error {
		return obs.waitFor(ctx, name, t0, b.cfg.OpTimeout, name+" on every agent", func(s *snapshot) (bool, error) {
			svc, ok, err := s.ready(name)
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
	})
	obs.stop()
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
	return lat.result(scenario, n, b.cfg.Clients, len(agents), wall, lost), ctx.Err()
}

func uuids(agents []agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.UUID
	}
	return out
}

// lostOnAgents compares each agent's listeners among names with want
// (agent uuid -> services): a missing listener, one at the wrong port, or
// one that should be gone is a lost entry.
func (b *bench) lostOnAgents(ctx context.Context, agents []agent, names []string, want map[string]map[string]bool) (int, error) {
	ports := map[string]string{}
	for _, name := range names {
		s, err := b.c.getService(ctx, name)
		if err != nil {
			return len(names) * len(agents), err
		}
		ports[name] = strconv.Itoa(s.BridgePort)
	}
	lost := 0
	for _, a := range agents {
		rc, err := b.c.agentRouter(ctx, a.UUID)
		if err != nil && !notFound(err) {
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
	count := max(2, b.cfg.Agents)
	tokenOf := func(i int) string {
		if i%2 == 0 {
			return x
		}
		return y
	}
	agents, err := b.createAgents(ctx, scenario, count, func(i int) []string { return []string{b.cfg.TagPrefix + ": " + tokenOf(i)} })
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
	services := min(b.cfg.Clients, b.cfg.N)
	names := make([]string, services)
	current := make([]string, services) // each service's token
	var setupErr error
	var mu sync.Mutex
	var mine []string
	Parallel(ctx, services, services, func(i int) {
		names[i], current[i] = b.serviceName("e", i), x
		t0 := time.Now()
		err := b.c.createService(ctx, externalService(names[i], []string{x}))
		if err == nil {
			mu.Lock()
			mine = append(mine, names[i])
			mu.Unlock()
			err = obs.waitFor(ctx, names[i], t0, b.cfg.OpTimeout, names[i]+" on the x agents", matches(names[i], x))
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
	var lat Latencies
	start := time.Now()
	Parallel(ctx, services, services, func(i int) {
		for k := i; k < b.cfg.N; k += services {
			next := x
			if current[i] == x {
				next = y
			}
			t0 := time.Now()
			err := b.c.patchService(ctx, names[i], map[string]any{"tags": []string{next}})
			if err == nil {
				current[i] = next
				err = obs.waitFor(ctx, names[i], t0, b.cfg.OpTimeout, names[i]+" on the "+next+" agents", matches(names[i], next))
			}
			if err != nil {
				b.opError(scenario, fmt.Errorf("%s: %w", names[i], err))
			}
			lat.Add(time.Since(t0), err)
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
	return lat.result(scenario, b.cfg.N, services, len(agents), wall, lost), ctx.Err()
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

// cleanup deletes the services, waits (bounded) until the routers no
// longer hold them, then deletes the agents. It runs even when ctx ended.
func (b *bench) cleanup(services []string, routers []string, agents []agent) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(len(services))*100*time.Millisecond)
	defer cancel()
	Parallel(ctx, len(services), 8, func(i int) {
		if err := b.c.deleteService(ctx, services[i]); err != nil && !notFound(err) {
			b.opError("cleanup", err)
		}
	})
	if len(services) > 0 {
		deadline := time.Now().Add(b.cfg.OpTimeout)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			left := 0
			for _, r := range routers {
				rc, err := b.c.agentRouter(ctx, r)
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
	Parallel(ctx, len(agents), 8, func(i int) {
		if agents[i].UUID == "" {
			return
		}
		if err := b.c.deleteAgent(ctx, agents[i].UUID); err != nil && !notFound(err) {
			b.opError("cleanup", err)
		}
	})
}
