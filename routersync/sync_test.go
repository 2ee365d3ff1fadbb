package routersync

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svcbridge/porttest"
	"svcbridge/proctest"
	"svcbridge/routerconfig"
	"svcbridge/routermgmt"
	"svcbridge/routertest"
)

// memSource is a Source the test feeds: each document it is given is the
// next Wait's answer; reports are kept.
type memSource struct {
	docs    chan Desired
	mu      sync.Mutex
	reports []Report
}

func (m *memSource) Wait(ctx context.Context, _ string) (Desired, error) {
	select {
	case d := <-m.docs:
		return d, nil
	case <-ctx.Done():
		return Desired{}, ctx.Err()
	}
}

func (m *memSource) Report(_ context.Context, r Report) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reports = append(m.reports, r)
	return nil
}

func (m *memSource) last() (Report, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reports) == 0 {
		return Report{}, false
	}
	return m.reports[len(m.reports)-1], true
}

// doc is an agent's router document: a router on mgmtPort with the given
// bridges (JSON members of tcpListeners and tcpConnectors).
func doc(t *testing.T, version string, seq int64, mgmtPort int, listeners, connectors string) Desired {
	t.Helper()
	raw := fmt.Sprintf(`{"metadata":{"id":"r1","mode":"interior"},
		"listeners":{"amqp":{"name":"amqp","host":"127.0.0.1","port":"%d","role":"normal"}},
		"bridges":{"tcpListeners":{%s},"tcpConnectors":{%s}}}`, mgmtPort, listeners, connectors)
	es, err := routerconfig.Entities([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return Desired{Version: version, Seq: seq, Entities: es, Types: AgentTypes}
}

func bridge(name string, port int, address string) string {
	return fmt.Sprintf(`"%s":{"name":"%s","port":"%d","address":"%s"}`, name, name, port, address)
}

func connector(name, host string, port int, address string) string {
	return fmt.Sprintf(`"%s":{"name":"%s","host":"%s","port":"%d","address":"%s","processId":"p-%s"}`, name, name, host, port, address, name)
}

func echo(t *testing.T, prefix string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	routertest.Echo(t, ln, prefix)
	return ln.Addr().(*net.TCPAddr).Port
}

// through sends bytes to a bridge port and returns what came back.
func through(port int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return routertest.RoundTrip(ctx, routertest.Loopback, fmt.Sprintf("127.0.0.1:%d", port), "ping")
}

// waitFor waits up to 20 s.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	proctest.WaitFor(t, what, 20*time.Second, cond)
}

// TestSyncAppliesToARealRouter runs the sync against a real skupper router
// on loopback: the first document becomes the router's start-up file and
// carries bytes; a changed connector is replaced and traffic follows; an
// entity the sync does not own survives; an entity the router refuses and
// a listener whose port is taken are reported by name with the router's
// reason, the rest applied; a router killed and started again from its
// file converges with nothing re-created.
func TestSyncAppliesToARealRouter(t *testing.T) {
	bin := routertest.Binary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "skrouterd.json")
	mgmt := porttest.Free(t)
	bridgePort, takenPort := porttest.Free(t), porttest.Free(t)
	backendA, backendB := echo(t, "A:"), echo(t, "B:")

	src := &memSource{docs: make(chan Desired, 10)}
	addr := fmt.Sprintf("127.0.0.1:%d", mgmt)
	logs := &proctest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the sync's log:\n%s", logs.String())
		}
	})
	s := New(Options{Source: src, ConfigFile: file, Resync: time.Hour, Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Dial: func(ctx context.Context) (Router, error) { return routermgmt.Dial(ctx, addr) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	src.docs <- doc(t, `"1"`, 1, mgmt, bridge("a-listener", bridgePort, "a"), connector("a-connector", "127.0.0.1", backendA, "a"))
	waitFor(t, "the first start-up file", func() (bool, string) {
		_, err := os.Stat(file)
		return err == nil, fmt.Sprint(err)
	})
	router := routertest.Start(t, "r1", bin, file)
	routertest.WaitPort(t, routertest.Loopback, addr, 10*time.Second)
	waitFor(t, "bytes through the bridge", func() (bool, string) {
		got, err := through(bridgePort)
		return got == "A:ping", fmt.Sprintf("%q %v", got, err)
	})
	waitFor(t, "a report acknowledging change 1", func() (bool, string) {
		r, ok := src.last()
		return ok && r.LastUpdated != nil && *r.LastUpdated == 1 && r.Error == "" && r.TCPListeners == 1 && r.TCPConnectors == 1, fmt.Sprintf("%+v", r)
	})

	// Someone else's listener on the router: not svcbridge's, kept.
	m, err := routermgmt.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Create(context.Background(), routerconfig.Entity{Type: routerconfig.EntityTCPListener, Name: "manual",
		Attrs: map[string]any{"name": "manual", "port": fmt.Sprint(porttest.Free(t)), "address": "manual"}}); err != nil {
		t.Fatal(err)
	}

	// The connector moves to backend B; a connector the router refuses
	// (an attribute it does not know) and a listener on a taken port join.
	taken, err := net.Listen("tcp", fmt.Sprintf(":%d", takenPort))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	src.docs <- doc(t, `"2"`, 2, mgmt,
		bridge("a-listener", bridgePort, "a")+","+bridge("b-listener", takenPort, "a"),
		connector("a-connector", "127.0.0.1", backendB, "a")+`,"bad-connector":{"name":"bad-connector","host":"h","port":"1","address":"x","color":"red"}`)
	waitFor(t, "traffic on backend B", func() (bool, string) {
		got, err := through(bridgePort)
		return got == "B:ping", fmt.Sprintf("%q %v", got, err)
	})
	waitFor(t, "a report naming both failures", func() (bool, string) {
		r, _ := src.last()
		var reasons []string
		for _, f := range r.Failed {
			reasons = append(reasons, f.Type+"/"+f.Name+": "+f.Reason)
		}
		all := strings.Join(reasons, "; ")
		ok := len(r.Failed) == 2 && strings.Contains(all, "tcpConnector/bad-connector: ") && strings.Contains(all, "color") &&
			strings.Contains(all, "tcpListener/b-listener: Address already in use") && r.LastUpdated != nil && *r.LastUpdated == 2
		return ok, all
	})
	held, err := m.Query(context.Background(), routerconfig.EntityTCPListener)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEntity(held, "manual") {
		t.Errorf("the sync removed a listener it does not own: %v", held)
	}
	content, _ := os.ReadFile(file)
	if strings.Contains(string(content), "bad-connector") || !strings.Contains(string(content), fmt.Sprint(backendB)) {
		t.Errorf("the start-up file should hold what the router took, without what it refused:\n%s", content)
	}

	// The taken port is freed: the next apply (its retry) binds it.
	taken.Close()
	waitFor(t, "the listener on the freed port", func() (bool, string) {
		r, _ := src.last()
		return len(r.Failed) == 1, fmt.Sprintf("%+v", r.Failed)
	})

	// A router killed and started again from its file serves at once and
	// the sync, reconnected, has nothing to re-create.
	router.Kill()
	before := len(logs.String())
	routertest.Start(t, "r1 again", bin, file)
	routertest.WaitPort(t, routertest.Loopback, addr, 10*time.Second)
	waitFor(t, "bytes after the restart", func() (bool, string) {
		got, err := through(bridgePort)
		return got == "B:ping", fmt.Sprintf("%q %v", got, err)
	})
	waitFor(t, "the sync back on the restarted router", func() (bool, string) {
		after := logs.String()[before:]
		_, applied, _ := strings.Cut(after, "connected to the router's management")
		return strings.Contains(applied, "msg=applied"), after
	})
	after := logs.String()[before:]
	_, reconnected, _ := strings.Cut(after, "connected to the router's management")
	_, applied, _ := strings.Cut(reconnected, "msg=applied")
	if !strings.Contains(applied, "created=0 deleted=0") {
		t.Errorf("the sync changed what the restarted router held from its file: %s", after)
	}
}

func hasEntity(es []routerconfig.Entity, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return true
		}
	}
	return false
}

// refusingSource is a memSource whose control plane refuses the first
// refuse reports, as one restarting does.
type refusingSource struct {
	memSource
	refuse atomic.Int32
}

func (r *refusingSource) Report(ctx context.Context, rep Report) error {
	if r.refuse.Add(-1) >= 0 {
		return fmt.Errorf("503 Service Unavailable")
	}
	return r.memSource.Report(ctx, rep)
}

// TestSyncReportsAgainUntilTaken: a report the control plane did not take
// (it was restarting) is sent again within seconds, though nothing else
// makes the sync apply before its resync an hour later: the change the
// router holds is acknowledged, and its rollout does not stay pending.
func TestSyncReportsAgainUntilTaken(t *testing.T) {
	bin := routertest.Binary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "skrouterd.json")
	mgmt := porttest.Free(t)
	addr := fmt.Sprintf("127.0.0.1:%d", mgmt)
	src := &refusingSource{memSource: memSource{docs: make(chan Desired, 1)}}
	src.refuse.Store(2)
	s := New(Options{Source: src, ConfigFile: file, Resync: time.Hour, Log: slog.New(slog.DiscardHandler),
		Dial: func(ctx context.Context) (Router, error) { return routermgmt.Dial(ctx, addr) }})
	// The router first, so that the first apply succeeds: a connector
	// alone makes no listener to look at again.
	empty := doc(t, `"0"`, 0, mgmt, "", "")
	if err := s.writeFile(empty, nil); err != nil {
		t.Fatal(err)
	}
	routertest.Start(t, "r1", bin, file)
	routertest.WaitPort(t, routertest.Loopback, addr, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	src.docs <- doc(t, `"1"`, 7, mgmt, "", connector("a-connector", "127.0.0.1", porttest.Free(t), "a"))
	waitFor(t, "a report of change 7, once the control plane takes reports", func() (bool, string) {
		r, ok := src.last()
		return ok && r.LastUpdated != nil && *r.LastUpdated == 7 && r.TCPConnectors == 1 && r.Error == "", fmt.Sprintf("%+v", r)
	})
}
