package meshtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"svcbridge/proctest"
)

const tagPrefix = "service.iofog.org/tag: "

// follows is how long traffic may take to follow a change: the document
// is written, the router-sync's long poll answers at once, the router
// applies a bridge in about 50 ms. Measured figures are in
// docs/performance.md; this leaves room for a loaded CI machine.
const follows = 15 * time.Second

// fleet is the mesh most tests run on: a hub (interior, the default
// router), an interior agent core below it, edge1 uplinked to the hub and
// edge2 to core, and ext, an external host with no router; svcbridge dev
// in the test's namespace.
type fleet struct {
	t                            testing.TB
	m                            *Mesh
	p                            *Plane
	hub, core, edge1, edge2, ext *Host
	nodes                        map[string]*Node
}

func newFleet(t testing.TB) *fleet {
	m := New(t)
	f := &fleet{t: t, m: m, nodes: map[string]*Node{}}
	f.ext = m.Host("ext", nil)
	f.hub = m.Host("hub", map[string]string{"vendor.example": f.ext.IP})
	f.core = m.Host("core", nil)
	edgelet := map[string]string{"edgelet.default.svc.bridge.local": "127.0.0.1", "orders.checkout": "127.0.0.2"}
	f.edge1 = m.Host("edge1", edgelet)
	f.edge2 = m.Host("edge2", edgelet)
	f.p = StartPlane(t, m)

	tokens := map[string]string{
		"hub":   f.p.Agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": f.hub.IP}),
		"core":  f.p.Agent(map[string]any{"name": "core", "routerMode": "interior", "host": f.core.IP, "upstreamRouters": []string{"hub"}, "tags": []string{tagPrefix + "checkout"}}),
		"edge1": f.p.Agent(map[string]any{"name": "edge1", "routerMode": "edge", "host": f.edge1.IP, "upstreamRouters": []string{"hub"}, "tags": []string{tagPrefix + "ops"}}),
		"edge2": f.p.Agent(map[string]any{"name": "edge2", "routerMode": "edge", "host": f.edge2.IP, "upstreamRouters": []string{"core"}, "tags": []string{tagPrefix + "checkout", tagPrefix + "vendor"}}),
	}
	// The hub first: the others link to it.
	for _, h := range []*Host{f.hub, f.core, f.edge1, f.edge2} {
		f.nodes[h.Name] = StartNode(t, h, f.p, tokens[h.Name])
	}
	f.ext.Echo("0.0.0.0:443", "vendor@ext:")
	f.edge1.Echo("127.0.0.2:8080", "checkout@edge1:")
	f.edge2.Echo("127.0.0.1:2222", "ssh@edge2:")
	f.core.Echo("127.0.0.1:2223", "ssh@core:")
	return f
}

// service creates a service and returns its bridge port once it is ready.
func (f *fleet) service(body map[string]any) int {
	f.t.Helper()
	f.p.Call(http.MethodPost, "/services", body, http.StatusCreated, nil)
	return f.ready(body["name"].(string))
}

// ready waits until a service is ready and returns its bridge port.
func (f *fleet) ready(name string) int {
	f.t.Helper()
	var svc struct {
		BridgePort         int    `json:"bridgePort"`
		ProvisioningStatus string `json:"provisioningStatus"`
		Generation         int64  `json:"generation"`
		ObservedGeneration int64  `json:"observedGeneration"`
	}
	proctest.WaitFor(f.t, name+" ready", 60*time.Second, func() (bool, string) {
		f.p.Call(http.MethodGet, "/services/"+name, nil, http.StatusOK, &svc)
		return svc.ProvisioningStatus == "ready" && svc.Generation == svc.ObservedGeneration, fmt.Sprintf("%+v", svc)
	})
	return svc.BridgePort
}

// reaches waits until a client on each host given gets back prefix from
// the service's bridge port, and one on every other router's host is
// refused.
func (f *fleet) reaches(port int, prefix string, hosts ...*Host) {
	f.t.Helper()
	f.reachesWithin(follows, port, prefix, hosts...)
}

// reachesWithin is reaches, waiting up to timeout.
func (f *fleet) reachesWithin(timeout time.Duration, port int, prefix string, hosts ...*Host) {
	f.t.Helper()
	proctest.WaitFor(f.t, fmt.Sprintf("port %d: %s from %v only", port, prefix, names(hosts)), timeout, func() (bool, string) {
		var wrong []string
		for _, h := range []*Host{f.hub, f.core, f.edge1, f.edge2} {
			got, err := h.RoundTrip(port, "ping")
			switch {
			case slices.Contains(hosts, h) && got != prefix+"ping":
				wrong = append(wrong, fmt.Sprintf("%s got %q (%v)", h.Name, got, err))
			case !slices.Contains(hosts, h) && !Refused(err):
				wrong = append(wrong, fmt.Sprintf("%s was not refused: %q %v", h.Name, got, err))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

func names(hosts []*Host) []string {
	var out []string
	for _, h := range hosts {
		out = append(out, h.Name)
	}
	return out
}

// converged checks that every router holds exactly the bridges its agent's
// document holds: nothing left behind, nothing missing.
func (f *fleet) converged() {
	f.t.Helper()
	proctest.WaitFor(f.t, "every router holding its document's bridges, no more", follows, func() (bool, string) {
		var wrong []string
		for name, n := range f.nodes {
			var doc struct {
				Bridges struct {
					TCPListeners  map[string]any `json:"tcpListeners"`
					TCPConnectors map[string]any `json:"tcpConnectors"`
				} `json:"bridges"`
			}
			var want []string
			if code := f.p.Get("/agents/"+name+"/router", &doc); code == http.StatusOK {
				for l := range doc.Bridges.TCPListeners {
					want = append(want, "tcpListener/"+l)
				}
				for c := range doc.Bridges.TCPConnectors {
					want = append(want, "tcpConnector/"+c)
				}
			}
			slices.Sort(want)
			held, err := n.Held()
			if err != nil || !slices.Equal(held, want) {
				wrong = append(wrong, fmt.Sprintf("%s holds %v (%v), its document %v", name, held, err, want))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

// TestMeshCarriesEachType: for each type a remote control plane takes
// (microservice, agent on an edge and on an interior router, external), a
// client on the hub and on every agent whose tags select the service gets
// its bytes echoed by the backend at the bridge port, and a client on an
// agent the tags do not select is refused.
func TestMeshCarriesEachType(t *testing.T) {
	f := newFleet(t)
	f.p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	checkout := f.service(map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}})
	edgeSSH := f.service(map[string]any{"name": "edge2-ssh", "type": "agent", "resource": "edge2", "targetPort": 2222, "tags": []string{"ops"}})
	coreSSH := f.service(map[string]any{"name": "core-ssh", "type": "agent", "resource": "core", "targetPort": 2223, "tags": []string{"ops"}})
	vendor := f.service(map[string]any{"name": "vendor", "type": "external", "resource": "vendor.example", "targetPort": 443, "tags": []string{"vendor"}})

	// checkout's connector is on edge1, which its tags do not select.
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge2)
	f.reaches(edgeSSH, "ssh@edge2:", f.hub, f.edge1)
	f.reaches(coreSSH, "ssh@core:", f.hub, f.edge1)
	f.reaches(vendor, "vendor@ext:", f.hub, f.edge2)
	f.converged()

	// What svcbridge shows is what the routers hold: every listener of
	// checkout applied, each router in step. A router-sync reports after
	// it applies, so a report may trail the bridges its router already
	// holds: each is waited for, as the rollout is.
	f.rollout("checkout", map[string]string{"hub": "applied", "core": "applied", "edge2": "applied"})
	for _, name := range []string{"hub", "core", "edge1", "edge2"} {
		proctest.WaitFor(t, "agent "+name+"'s router in step", follows, func() (bool, string) {
			var a struct {
				Router *struct {
					Error   string `json:"error"`
					Lagging bool   `json:"lagging"`
				} `json:"router"`
			}
			f.p.Call(http.MethodGet, "/agents/"+name, nil, http.StatusOK, &a)
			return a.Router != nil && a.Router.Error == "" && !a.Router.Lagging, fmt.Sprintf("router %+v", a.Router)
		})
	}

	// edge2's token revoked (rotated): its router-sync can no longer read
	// the document, says why, and leaves the router as it is; with the
	// new token it is back in step.
	var rotated struct {
		Token string `json:"token"`
	}
	f.p.Call(http.MethodPost, "/agents/edge2/token", nil, http.StatusOK, &rotated)
	edge2 := f.nodes["edge2"]
	proctest.WaitFor(t, "edge2's router-sync to say its token was refused", follows, func() (bool, string) {
		return strings.Contains(edge2.Sync.Output(), "the agent token was refused"), edge2.Sync.Tail(3)
	})
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge2)
	edge2.Sync.Stop()
	edge2.SetToken(rotated.Token)
	edge2.StartSync()
	f.converged()

	// A port already taken on edge1's host: its router cannot listen there.
	// svcbridge names the agent and the router's reason; the others serve.
	taken, err := f.edge1.Listen("0.0.0.0:10028")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	blocked := f.service(map[string]any{"name": "blocked", "type": "agent", "resource": "core", "targetPort": 2223, "tags": []string{"ops"}})
	if blocked != 10028 {
		t.Fatalf("blocked got bridge port %d, want the taken 10028", blocked)
	}
	f.rollout("blocked", map[string]string{"hub": "applied", "edge1": "failed: Address already in use - listen on :10028"})
	cli := f.p.CLI("apply", "-f", f.p.File("blocked.yaml", "kind: Service\nmetadata: {name: blocked, tags: [ops]}\nspec: {type: agent, resource: core, targetPort: 2223}\n"),
		"--wait=rollout", "--timeout", "30s")
	if cli.Code != 3 || !strings.Contains(cli.Stderr, "service blocked failed: its listener was refused by the router of edge1: Address already in use") {
		t.Errorf("apply --wait=rollout with a port taken on edge1: %+v", cli)
	}
	if out := f.p.CLI("describe", "service", "blocked").Stdout; !regexp.MustCompile(`(?m)^\s+edge1\s+service\.iofog\.org/tag: ops\s+no \(router refused\)\s+failed: Address already in use`).MatchString(out) {
		t.Errorf("describe service blocked:\n%s", out)
	}
	if out := f.p.CLI("status").Stdout; !regexp.MustCompile(`(?m)^edge1\s+edge\s+\S+\s+refused 1: blocked-listener Address already in use`).MatchString(out) {
		t.Errorf("status:\n%s", out)
	}
	// The port freed, the router's retry takes it.
	taken.Close()
	f.rollout("blocked", map[string]string{"hub": "applied", "edge1": "applied"})
	f.reaches(blocked, "ssh@core:", f.hub, f.edge1)
}

// rollout waits until a service's distribution shows each agent's
// listener as want says: "applied", or "failed: <reason>".
func (f *fleet) rollout(service string, want map[string]string) {
	f.t.Helper()
	proctest.WaitFor(f.t, service+"'s rollout "+fmt.Sprint(want), follows, func() (bool, string) {
		var svc struct {
			Distribution []struct {
				AgentName     string `json:"agentName"`
				Rollout       string `json:"rollout"`
				RolloutReason string `json:"rolloutReason"`
			} `json:"distribution"`
		}
		f.p.Call(http.MethodGet, "/services/"+service, nil, http.StatusOK, &svc)
		got := map[string]string{}
		for _, e := range svc.Distribution {
			got[e.AgentName] = e.Rollout
			if e.RolloutReason != "" {
				got[e.AgentName] += ": " + e.RolloutReason
			}
		}
		return maps.Equal(got, want), fmt.Sprint(got)
	})
}

// TestMeshFollowsChanges: traffic follows each change within follows, and
// the old path closes: a new targetPort, the microservice moved to another
// agent, the service's tags edited (the agents that lost them refuse, the
// new ones answer), an agent set to routerMode none (its router drops
// svcbridge's bridges), a delete (every agent refuses).
func TestMeshFollowsChanges(t *testing.T) {
	f := newFleet(t)
	f.edge1.Echo("127.0.0.2:8081", "checkout8081@edge1:")
	f.edge2.SetHosts(map[string]string{"edgelet.default.svc.bridge.local": "127.0.0.1", "orders.checkout": "127.0.0.3"})
	f.edge2.Echo("127.0.0.3:8081", "checkout@edge2:")
	f.p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	var ms struct {
		Microservices []struct {
			UUID string `json:"uuid"`
		} `json:"microservices"`
	}
	f.p.Call(http.MethodGet, "/microservices", nil, http.StatusOK, &ms)
	checkout := f.service(map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}})
	vendor := f.service(map[string]any{"name": "vendor", "type": "external", "resource": "vendor.example", "targetPort": 443, "tags": []string{"vendor"}})
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge2)
	f.reaches(vendor, "vendor@ext:", f.hub, f.edge2)

	change := func(what string, do func(), port int, prefix string, hosts ...*Host) {
		t.Helper()
		start := time.Now()
		do()
		f.reaches(port, prefix, hosts...)
		t.Logf("%s: traffic followed in %s", what, time.Since(start).Round(time.Millisecond))
	}
	change("targetPort 8080 -> 8081", func() {
		f.p.Call(http.MethodPatch, "/services/checkout", map[string]any{"targetPort": 8081}, http.StatusNoContent, nil)
	}, checkout, "checkout8081@edge1:", f.hub, f.core, f.edge2)
	change("microservice moved to edge2", func() {
		f.p.Call(http.MethodPatch, "/microservices/"+ms.Microservices[0].UUID, map[string]any{"agent": "edge2"}, http.StatusOK, nil)
	}, checkout, "checkout@edge2:", f.hub, f.core, f.edge2)
	change("tags checkout -> ops", func() {
		f.p.Call(http.MethodPatch, "/services/checkout", map[string]any{"tags": []string{"ops"}}, http.StatusNoContent, nil)
	}, checkout, "checkout@edge2:", f.hub, f.edge1)
	change("edge1 routerMode none", func() {
		f.p.Call(http.MethodPatch, "/agents/edge1", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}, http.StatusOK, nil)
	}, checkout, "checkout@edge2:", f.hub)
	change("vendor deleted", func() {
		f.p.Call(http.MethodDelete, "/services/vendor", nil, http.StatusNoContent, nil)
	}, vendor, "")
	held, err := f.nodes["edge1"].Held()
	if err != nil || len(held) != 0 {
		t.Errorf("edge1, now without a router in svcbridge, still holds %v (%v)", held, err)
	}
	delete(f.nodes, "edge1")
	f.converged()
}

// outage is how long TestMeshSurvivesFaults keeps svcbridge down
// (MESH_OUTAGE overrides it, for a quick run).
func outage() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MESH_OUTAGE")); err == nil {
		return d
	}
	return time.Minute
}

// TestMeshSurvivesFaults: a router killed and started again from the file
// its router-sync keeps, a router-sync restarted, and svcbridge (API,
// worker, Temporal) stopped for a minute: traffic keeps flowing, a
// connection opened before the outage carries bytes through it, new
// connections work during it, and after each fault everything converges
// with nothing left behind, with no change in svcbridge.
func TestMeshSurvivesFaults(t *testing.T) {
	f := newFleet(t)
	f.p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	checkout := f.service(map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080, "tags": []string{"checkout"}})
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge2)

	// The backend's router, killed: no path until it is back; back from
	// its file, it serves with svcbridge untouched.
	f.nodes["edge1"].Router.Kill()
	f.reaches(checkout, "") // a listener closes with the last connector of its address
	f.nodes["edge1"].StartRouter()
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge2)
	f.converged()

	// A listening router killed mid-change: svcbridge's change waits for
	// it and lands when it is back.
	f.nodes["edge2"].Router.Kill()
	f.p.Call(http.MethodPatch, "/services/checkout", map[string]any{"tags": []string{"checkout", "ops"}}, http.StatusNoContent, nil)
	f.nodes["edge2"].StartRouter()
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge1, f.edge2)
	f.converged()

	// A router-sync stopped while a change is made: the router keeps
	// serving; the restarted sync applies the change.
	f.nodes["core"].Sync.Stop()
	f.p.Call(http.MethodPatch, "/services/checkout", map[string]any{"tags": []string{"ops"}}, http.StatusNoContent, nil)
	f.reaches(checkout, "checkout@edge1:", f.hub, f.core, f.edge1)
	f.nodes["core"].StartSync()
	f.reaches(checkout, "checkout@edge1:", f.hub, f.edge1)
	f.converged()

	// svcbridge down: routers keep what they hold, established
	// connections and new ones carry bytes.
	conn, err := f.edge1.Dial(context.Background(), fmt.Sprintf("127.0.0.1:%d", checkout))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	echoed := func(payload string) error {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(payload)); err != nil {
			return err
		}
		buf := make([]byte, len(payload))
		_, err := io.ReadFull(conn, buf)
		if err == nil && string(buf) != payload {
			err = fmt.Errorf("echoed %q, want %q", buf, payload)
		}
		return err
	}
	greeting := make([]byte, len("checkout@edge1:"))
	if _, err := io.ReadFull(conn, greeting); err != nil {
		t.Fatal(err)
	}
	if err := echoed("before"); err != nil {
		t.Fatal(err)
	}
	f.p.Stop()
	deadline := time.Now().Add(outage())
	for time.Now().Before(deadline) {
		time.Sleep(min(10*time.Second, time.Until(deadline)))
		if got, err := f.hub.RoundTrip(checkout, "during"); got != "checkout@edge1:during" {
			t.Fatalf("a new connection while svcbridge is down: %q %v", got, err)
		}
	}
	if err := echoed("through the outage"); err != nil {
		t.Fatalf("the connection opened before svcbridge stopped: %v", err)
	}
	f.p.Start()
	// A change once it is back (one that leaves edge1's listener alone:
	// removing a listener closes its connections).
	f.p.Call(http.MethodPatch, "/services/checkout", map[string]any{"tags": []string{"ops", "checkout"}}, http.StatusNoContent, nil)
	// Each router-sync asks again within its back-off (at most 36 s after
	// its last try).
	f.ready("checkout")
	f.reachesWithin(time.Minute, checkout, "checkout@edge1:", f.hub, f.core, f.edge1, f.edge2)
	if err := echoed("after"); err != nil {
		t.Fatalf("the connection opened before svcbridge stopped, after: %v", err)
	}
	f.converged()
}
