package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporaltest"

	"svcbridge/pgtest"
	"svcbridge/porttest"
	"svcbridge/service"
	"svcbridge/workflows/temporalclient"
)

// The production shape: two `svcbridge api` and two `svcbridge worker`
// processes (the real binary) on one PostgreSQL database and one Temporal
// server. Concurrent creates, updates, deletes and agent tag edits go
// through both APIs; in the end the state is exactly right.

const (
	replicaTagPrefix = "service.iofog.org/tag"
	replicaHubHost   = "hub.example.com"
	replicaSeed      = 20240611
)

// replicaAgent is an agent of the fleet, as the test knows it.
type replicaAgent struct {
	name, uuid, mode string
	tags             []string // final tags
}

// replicaMS is a microservice of the fleet.
type replicaMS struct {
	uuid, app, name, agent string // agent: name
	hostNetwork            bool
}

func (m replicaMS) ref() string { return m.app + "/" + m.name }

// replicaSpec is what a service should be once everything settled.
type replicaSpec struct {
	name       string
	typ        string
	resource   string // as sent: app/ms, agent name, or an IP
	targetPort int
	tags       []string
	bridgePort int // answered by the create
}

// replicaClient talks to one API process; safe for goroutines (it returns
// errors instead of failing the test).
type replicaClient struct{ url string }

func (c replicaClient) call(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s%s: %w", method, c.url, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// expect sends a request that must answer want, decoding into into.
func (c replicaClient) expect(want int, method, path string, body, into any) error {
	code, out, err := c.call(method, path, body)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("%s %s via %s: status %d, want %d: %s", method, path, c.url, code, want, out)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, path, out, err)
		}
	}
	return nil
}

func TestTwoAPIsAndTwoWorkers(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	dbURL := pgtest.NewDB(t)
	ctx := context.Background()
	if err := temporalclient.RegisterSearchAttributes(ctx, ts.GetDefaultClient(), ts.GetDefaultNamespace()); err != nil {
		t.Fatalf("register search attributes: %v", err)
	}
	env := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + ts.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE=" + ts.GetDefaultNamespace(), "TASK_QUEUE=" + taskQueue, "RESYNC_INTERVAL=1s",
		"CONTROL_PLANE=remote", "BRIDGE_PORTS_RANGE=10024-65535", "SERVICE_ANNOTATION_TAG=" + replicaTagPrefix,
		"AUTH_TOKENS_FILE=" + tokensFile(t)}

	// All four start at once on an empty database: their migrations must
	// serialise (the README says replicas may start together).
	var apis []*system
	var apiProcs, workerProcs []*proc
	for range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
		apiProcs = append(apiProcs, start(t, env, "api", "--listen", addr))
		apis = append(apis, &system{t: t, url: "http://" + addr})
	}
	for range 2 {
		workerProcs = append(workerProcs, start(t, env, "worker"))
	}
	for i, s := range apis {
		waitHTTP(t, s.url+"/readyz", apiProcs[i])
	}
	replicaWaitPollers(t, ts, 2, workerProcs)
	clients := []replicaClient{{apis[0].url}, {apis[1].url}}

	// The fleet, built through api #1: a hub, an interior agent and six
	// edge agents below the hub, a microservice on each, and one in host
	// network mode.
	s := apis[0]
	agents := map[string]*replicaAgent{}
	addAgent := func(body map[string]any) {
		a := s.agent(body)
		tags, _ := body["tags"].([]string)
		agents[a.Name] = &replicaAgent{name: a.Name, uuid: a.UUID, mode: body["routerMode"].(string), tags: tags}
	}
	addAgent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": replicaHubHost})
	addAgent(map[string]any{"name": "int-1", "routerMode": "interior", "upstreamRouters": []string{"hub"}})
	initialTags := [][]string{
		{replicaTagPrefix + ": alpha"},
		{replicaTagPrefix + ": beta", "zone: eu"},
		{replicaTagPrefix + ": all"},
		{},
		{replicaTagPrefix + ": alpha", replicaTagPrefix + ": gamma"},
		{replicaTagPrefix + ":delta"}, // no space after the colon: selects nothing
	}
	edges := []string{}
	for i, tags := range initialTags {
		name := fmt.Sprintf("fog-%d", i+1)
		edges = append(edges, name)
		addAgent(map[string]any{"name": name, "routerMode": "edge", "upstreamRouters": []string{"hub"}, "tags": tags})
	}
	backends := append([]string{"int-1"}, edges...) // agents that run microservices
	mss := map[string]replicaMS{}
	var msRefs []string
	for _, a := range backends {
		m := replicaMS{app: "app", name: a + "-ms", agent: a}
		m.uuid = s.microservice(map[string]any{"application": m.app, "name": m.name, "agent": a})
		mss[m.ref()] = m
		msRefs = append(msRefs, m.ref())
	}
	hostNet := replicaMS{app: "app", name: "fog-1-host", agent: "fog-1", hostNetwork: true}
	hostNet.uuid = s.microservice(map[string]any{"application": hostNet.app, "name": hostNet.name, "agent": "fog-1", "hostNetworkMode": true})
	mss[hostNet.ref()] = hostNet
	msRefs = append(msRefs, hostNet.ref())

	// The scripts: each service's operations run in order in one goroutine,
	// services and agents concurrently, every request on the API the
	// operation's number picks.
	rng := rand.New(rand.NewPCG(replicaSeed, 1))
	tokens := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	randomTags := func() []string {
		tags := []string{}
		for _, tok := range tokens {
			if rng.IntN(4) == 0 {
				tags = append(tags, tok)
			}
		}
		if rng.IntN(5) == 0 {
			tags = append(tags, "team: payments") // an annotation, not a token
		}
		return tags
	}
	randomSpec := func(name string, typ string) replicaSpec {
		sp := replicaSpec{name: name, typ: typ, targetPort: 1000 + rng.IntN(9000), tags: randomTags()}
		switch typ {
		case service.TypeExternal:
			sp.resource = fmt.Sprintf("203.0.113.%d", 1+rng.IntN(250))
		case service.TypeMicroservice:
			sp.resource = msRefs[rng.IntN(len(msRefs))]
		case service.TypeAgent:
			sp.resource = backends[rng.IntN(len(backends))]
		}
		return sp
	}
	types := []string{service.TypeExternal, service.TypeMicroservice, service.TypeAgent}

	type op struct {
		method, path string
		body         map[string]any
		create       bool
	}
	const n = 60
	final := map[string]*replicaSpec{} // live services at the end
	deleted := map[string]bool{}       // deleted and not re-created
	scripts := make([][]op, n)
	var mu sync.Mutex // guards final (bridge ports) while the scripts run
	createOp := func(sp replicaSpec) op {
		body := map[string]any{"name": sp.name, "type": sp.typ, "resource": sp.resource, "targetPort": sp.targetPort, "tags": sp.tags}
		return op{method: "POST", path: "/api/v3/services", body: body, create: true}
	}
	for i := range n {
		name := fmt.Sprintf("svc-%02d", i)
		sp := randomSpec(name, types[i%len(types)])
		script := []op{createOp(sp)}
		cur := sp
		for range rng.IntN(3) + 1 {
			switch k := rng.IntN(3); {
			case k == 0:
				port := 1000 + rng.IntN(9000)
				script = append(script, op{method: "PATCH", path: "/api/v3/services/" + name,
					body: map[string]any{"targetPort": port}})
				cur.targetPort = port
			case k == 1 || cur.typ == service.TypeExternal:
				tags := randomTags()
				script = append(script, op{method: "PATCH", path: "/api/v3/services/" + name,
					body: map[string]any{"tags": tags}})
				cur.tags = tags
			default:
				// Move the backend: the connector must leave the old site.
				res := randomSpec(name, cur.typ).resource
				port := 1000 + rng.IntN(9000)
				script = append(script, op{method: "PATCH", path: "/api/v3/services/" + name,
					body: map[string]any{"resource": res, "targetPort": port}})
				cur.resource, cur.targetPort = res, port
			}
		}
		switch {
		case i%4 == 3 && i%20 == 3:
			// Deleted, then created again under the same name as another
			// type while the first incarnation's clean-up may still run.
			script = append(script, op{method: "DELETE", path: "/api/v3/services/" + name})
			again := randomSpec(name, types[(i+1)%len(types)])
			script = append(script, createOp(again))
			final[name] = &again
		case i%4 == 3:
			script = append(script, op{method: "DELETE", path: "/api/v3/services/" + name})
			deleted[name] = true
		default:
			f := cur
			final[name] = &f
		}
		scripts[i] = script
	}
	// Agent tag edits: each edge agent's tags change a few times.
	tagChoices := [][]string{
		{replicaTagPrefix + ": alpha"}, {replicaTagPrefix + ": beta"}, {replicaTagPrefix + ": gamma", "zone: us"},
		{replicaTagPrefix + ": all"}, {}, {replicaTagPrefix + ": delta", replicaTagPrefix + ": epsilon"},
		{replicaTagPrefix + ": team: payments"}, // a token with a colon selects nothing
		{replicaTagPrefix + ":  beta"},          // two spaces: selects nothing
	}
	// Random edits, then a last one chosen so that the final fleet has
	// agents selecting by one token, by several, by all, and by none.
	lastTags := [][]string{
		{replicaTagPrefix + ": alpha"},
		{replicaTagPrefix + ": beta", "zone: eu"},
		{replicaTagPrefix + ": all"},
		{replicaTagPrefix + ":  beta"},
		{replicaTagPrefix + ": gamma", replicaTagPrefix + ": delta"},
		{},
	}
	agentScripts := map[string][][]string{}
	for i, a := range edges {
		var edits [][]string
		for range 1 + rng.IntN(3) {
			edits = append(edits, tagChoices[rng.IntN(len(tagChoices))])
		}
		edits = append(edits, lastTags[(i+1)%len(lastTags)])
		agentScripts[a] = edits
		agents[a].tags = edits[len(edits)-1]
	}

	// Run everything at once.
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []string
	report := func(err error) {
		errMu.Lock()
		errs = append(errs, err.Error())
		errMu.Unlock()
	}
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				for k, o := range scripts[i] {
					c := clients[(i+k)%2]
					if o.create {
						var out serviceOut
						if err := c.expect(http.StatusCreated, o.method, o.path, o.body, &out); err != nil {
							report(err)
							break
						}
						mu.Lock()
						if f := final[out.Name]; f != nil && f.typ == out.Type {
							f.bridgePort = out.BridgePort
						}
						mu.Unlock()
					} else if err := c.expect(http.StatusNoContent, o.method, o.path, o.body, nil); err != nil {
						report(err)
						break
					}
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
				}
			}
		}()
	}
	for _, a := range edges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, tags := range agentScripts[a] {
				time.Sleep(time.Duration(20+rand.IntN(150)) * time.Millisecond)
				if err := clients[k%2].expect(http.StatusOK, "PATCH", "/api/v3/agents/"+a, map[string]any{"tags": tags}, nil); err != nil {
					report(err)
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d requests failed:\n%s", len(errs), strings.Join(errs, "\n"))
	}

	// Every live service settles ready, as the last change asked; read
	// through api #2 (the fleet was built through api #1).
	s2 := apis[1]
	list := s2.waitAllReady("every service to settle ready", len(final), 3*time.Minute)

	// The stored services are exactly the expected ones, each with its port.
	ports := map[int]string{}
	for _, svc := range list {
		want := final[svc.Name]
		if want == nil {
			t.Errorf("service %s exists, want it deleted", svc.Name)
			continue
		}
		if other, dup := ports[svc.BridgePort]; dup {
			t.Errorf("%s and %s share bridgePort %d", svc.Name, other, svc.BridgePort)
		}
		ports[svc.BridgePort] = svc.Name
		if svc.BridgePort != want.bridgePort {
			t.Errorf("%s: bridgePort %d, want the %d its create answered (kept across updates)", svc.Name, svc.BridgePort, want.bridgePort)
		}
		if svc.BridgePort < 10024 || svc.BridgePort > 65535 {
			t.Errorf("%s: bridgePort %d outside BRIDGE_PORTS_RANGE", svc.Name, svc.BridgePort)
		}
		if svc.Type != want.typ || svc.TargetPort != want.targetPort || svc.Resource != replicaStoredResource(*want, agents, mss) ||
			!slices.Equal(svc.Tags, want.tags) {
			t.Errorf("%s: stored type %s resource %s targetPort %d tags %q, want %s %s (%s) %d %q", svc.Name,
				svc.Type, svc.Resource, svc.TargetPort, svc.Tags, want.typ, want.resource, replicaStoredResource(*want, agents, mss), want.targetPort, want.tags)
		}
		if svc.ProvisioningError != nil || svc.ServiceEndpoint == nil || *svc.ServiceEndpoint != replicaHubHost ||
			svc.ServicePort == nil || *svc.ServicePort != svc.BridgePort {
			t.Errorf("%s: error %v endpoint %v servicePort %v, want none, %s and the bridge port", svc.Name,
				replicaDeref(svc.ProvisioningError), replicaDeref(svc.ServiceEndpoint), svc.ServicePort, replicaHubHost)
		}
	}
	for name := range deleted {
		if code, body := s.do("GET", "/api/v3/services/"+name, nil); code != http.StatusNotFound {
			t.Errorf("deleted %s answers %d: %s", name, code, body)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every router converges to exactly the expected objects: a -listener
	// for each service the agent's tags select (and, on the hub, every
	// service), a -connector where each backend is, nothing else.
	tags := service.TagRule{Prefix: replicaTagPrefix}
	expected := map[string]replicaRouter{}
	for _, a := range agents {
		expected[a.name] = replicaRouter{listeners: map[string]map[string]string{}, connectors: map[string]map[string]string{}}
	}
	for _, sp := range final {
		for _, a := range agents {
			if a.name == "hub" || tags.Selects(a.tags, sp.tags) {
				expected[a.name].listeners[sp.name+"-listener"] = map[string]string{
					"name": sp.name + "-listener", "port": strconv.Itoa(sp.bridgePort), "address": sp.name}
			}
		}
		site, connector := replicaConnector(*sp, agents, mss)
		expected[site].connectors[sp.name+"-connector"] = connector
	}
	var diff []string
	check := func() (bool, string) {
		diff = nil
		for _, a := range agents {
			diff = append(diff, replicaCompareRouter(s2, a.name, expected[a.name])...)
		}
		return len(diff) == 0, strings.Join(diff, "\n")
	}
	s2.waitFor("every router to hold exactly the expected objects", 90*time.Second, check)
	var summary []string
	for _, a := range agents {
		summary = append(summary, fmt.Sprintf("%s %d/%d", a.name, len(expected[a.name].listeners), len(expected[a.name].connectors)))
	}
	sort.Strings(summary)
	t.Logf("%d live services, %d deleted; listeners/connectors per router: %s", len(final), len(deleted), strings.Join(summary, ", "))
	// And it stays so: resyncs (every second) and late signals change nothing.
	time.Sleep(3 * time.Second)
	if ok, why := check(); !ok {
		t.Errorf("routers changed after converging:\n%s", why)
	}

	for i, p := range append(apiProcs, workerProcs...) {
		select {
		case err := <-p.done:
			t.Errorf("process %d exited during the test (%v):\n%s", i, err, p.out())
		default:
		}
	}
	// The schema the four processes migrated together is complete: another
	// migrate has nothing to do and succeeds.
	m := start(t, env, "migrate")
	select {
	case err := <-m.done:
		if err != nil || !strings.Contains(m.out(), "migrations applied") {
			t.Errorf("migrate after the run: %v\n%s", err, m.out())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("migrate did not finish within 60s:\n%s", m.out())
	}
}

// replicaWaitPollers waits until want distinct workers poll the activity task
// queue, so both worker processes take part.
func replicaWaitPollers(t *testing.T, ts *temporaltest.TestServer, want int, procs []*proc) {
	t.Helper()
	c := ts.GetDefaultClient()
	deadline := time.Now().Add(90 * time.Second)
	var last []string
	for time.Now().Before(deadline) {
		for _, p := range procs {
			select {
			case err := <-p.done:
				t.Fatalf("worker exited (%v):\n%s", err, p.out())
			default:
			}
		}
		resp, err := c.DescribeTaskQueue(context.Background(), taskQueue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err == nil {
			last = last[:0]
			for _, p := range resp.GetPollers() {
				last = append(last, p.GetIdentity())
			}
			if len(last) >= want {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%d workers poll %s after 90s (%v), want %d", len(last), taskQueue, last, want)
}

// replicaStoredResource is the resource as the API stores it: a uuid for
// microservice and agent backends.
func replicaStoredResource(sp replicaSpec, agents map[string]*replicaAgent, mss map[string]replicaMS) string {
	switch sp.typ {
	case service.TypeMicroservice:
		return mss[sp.resource].uuid
	case service.TypeAgent:
		return agents[sp.resource].uuid
	}
	return sp.resource
}

// replicaConnector is seed 000's connector for a service, and the agent
// whose router holds it: the microservice's agent, the agent itself, or
// the hub for an external host.
func replicaConnector(sp replicaSpec, agents map[string]*replicaAgent, mss map[string]replicaMS) (string, map[string]string) {
	port := strconv.Itoa(sp.targetPort)
	c := map[string]string{"name": sp.name + "-connector", "port": port, "address": sp.name}
	switch sp.typ {
	case service.TypeMicroservice:
		m := mss[sp.resource]
		switch {
		case agents[m.agent].mode == "interior":
			c["host"] = "127.0.0.1"
		case m.hostNetwork:
			c["host"] = service.EdgeletHost
		default:
			c["host"] = m.app + "." + m.name
		}
		c["processId"] = m.uuid
		return m.agent, c
	case service.TypeAgent:
		a := agents[sp.resource]
		c["host"] = service.EdgeletHost
		if a.mode == "interior" {
			c["host"] = "127.0.0.1"
		}
		c["processId"] = a.uuid + "-local-" + port
		return a.name, c
	}
	c["host"] = sp.resource
	c["processId"] = sp.resource + "-external-" + port
	return "hub", c
}

// replicaRouter is the bridge objects one agent's router should hold.
type replicaRouter struct {
	listeners, connectors map[string]map[string]string
}

// replicaCompareRouter lists how an agent's router differs from want.
func replicaCompareRouter(s *system, agent string, want replicaRouter) []string {
	listeners, connectors := s.bridges(agent)
	var diff []string
	cmp := func(kind string, got map[string]json.RawMessage, want map[string]map[string]string) {
		names := map[string]bool{}
		for n := range got {
			names[n] = true
		}
		for n := range want {
			names[n] = true
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			raw, have := got[n]
			w, wanted := want[n]
			switch {
			case !have:
				diff = append(diff, fmt.Sprintf("%s: %s %s missing", agent, kind, n))
			case !wanted:
				diff = append(diff, fmt.Sprintf("%s: stale %s %s: %s", agent, kind, n, raw))
			default:
				var obj map[string]string
				if err := json.Unmarshal(raw, &obj); err != nil || !maps.Equal(obj, w) {
					diff = append(diff, fmt.Sprintf("%s: %s %s is %s, want %v", agent, kind, n, raw, w))
				}
			}
		}
	}
	cmp("listener", listeners, want.listeners)
	cmp("connector", connectors, want.connectors)
	return diff
}

func replicaDeref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
