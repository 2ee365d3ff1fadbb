package cli

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"svcbridge/activities"
	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/routersync"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/wire"
)

// fleet is svcbridge in-process for the CLI's tests: the real API on a
// fresh SQLite store, whose reconcile requests run the real reconcile
// pass and agent fan-out at once (the activities, in Temporal's test
// activity environment) instead of through a workflow, so that what the
// CLI reads is what svcbridge answers, settled.
type fleet struct {
	t    *testing.T
	URL  string
	srv  *httptest.Server
	acts *activities.Activities
	env  *testsuite.TestActivityEnvironment
	mu   sync.Mutex // one reconcile at a time, as one workflow per service does
}

const fleetToken = "fleet-test-admin-token"

func newFleet(t *testing.T) *fleet {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SVCBRIDGE_SERVER", "")
	t.Setenv("SVCBRIDGE_TOKEN", "")
	st := storetest.Open(t, store.SQLite)
	tags := service.TagRule{Prefix: service.DefaultTagPrefix}
	f := &fleet{t: t, acts: &activities.Activities{Store: st, Tags: tags, ControlPlane: service.ControlPlaneRemote}}
	f.acts.Signaler = f
	suite := &testsuite.WorkflowTestSuite{}
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	f.env = suite.NewTestActivityEnvironment()
	for name, fn := range f.acts.ByName() {
		f.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	admin, err := auth.NewStatic(auth.StaticToken{Name: "admin", Role: string(auth.Admin), Token: fleetToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Options{Store: st, Reconciler: f, ControlPlane: service.ControlPlaneRemote,
		BridgePorts: store.PortRange{First: 10024, Last: 10099}, BridgePortsRaw: "10024-10099", Tags: tags, Auth: admin,
		WatchInterval: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)
	f.URL, f.srv = srv.URL, srv
	return f
}

// beside runs fn beside the test, which waits for it before the fleet
// closes: a pass's fan-out may still run when what a test waits for is
// seen.
func (f *fleet) beside(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	f.t.Cleanup(func() { <-done })
}

// wrap puts mw in front of the fleet's API, which it calls as api.
func (f *fleet) wrap(mw func(w http.ResponseWriter, r *http.Request, api http.Handler)) {
	h := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mw(w, r, h) })
}

// ServiceCreated, ServiceChanged and AgentsQueued are the API's
// Reconciler: each reconciles at once. A failed pass is recorded on the
// service, as the workflow's first attempt records it.
func (f *fleet) ServiceCreated(ctx context.Context, name string) error {
	return f.ServiceChanged(ctx, name)
}
func (f *fleet) ServiceChanged(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.env.ExecuteActivity(f.acts.ReconcileService, name)
	f.drain()
	return nil
}
func (f *fleet) AgentsQueued(context.Context, ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drain()
	return nil
}

// AgentsChanged is the activities' Signaler: the queued agents are
// drained at the end of the pass that queued them.
func (f *fleet) AgentsChanged(context.Context, ...string) error { return nil }

// drain reconciles the queued agents' routers until none is queued.
func (f *fleet) drain() {
	for {
		v, err := f.env.ExecuteActivity(f.acts.DrainAgents, 1000)
		if err != nil {
			f.t.Errorf("drain the agent queue: %v", err)
			return
		}
		var b struct{ Claimed int }
		if v.Get(&b); b.Claimed == 0 {
			return
		}
	}
}

// run runs the CLI against the fleet, as a user would.
func (f *fleet) run(args ...string) (code int, stdout, stderr string) {
	return runCLI(append(args, "--server", f.URL, "--token", fleetToken)...)
}

// must runs the CLI and fails the test on another exit code.
func (f *fleet) must(code int, args ...string) (stdout, stderr string) {
	f.t.Helper()
	got, stdout, stderr := f.run(args...)
	if got != code {
		f.t.Fatalf("svcbridge %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, stdout, stderr)
	}
	return stdout, stderr
}

// file writes a file of the test's and returns its path.
func (f *fleet) file(name, text string) string {
	p := filepath.Join(f.t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// fleetDoc is the README's walkthrough fleet: the hub, fog-a tagged for
// checkout, the microservice orders/checkout on fog-a and its service.
const fleetDoc = `apiVersion: iofog.org/v3
kind: Agent
metadata: {name: hub}
spec: {routerMode: interior, defaultRouter: true, host: hub.example.com}
---
apiVersion: iofog.org/v3
kind: AgentConfig
metadata:
  name: fog-a
  tags: ["service.iofog.org/tag: checkout"]
spec: {routerMode: edge, upstreamRouters: [hub]}
---
apiVersion: iofog.org/v3
kind: Microservice
metadata: {name: orders/checkout}
spec: {agent: fog-a}
---
apiVersion: iofog.org/v3
kind: Service
metadata: {name: checkout, tags: [checkout]}
spec: {type: microservice, resource: orders/checkout, targetPort: 8080}
`

// agentTokens reads the agents' tokens from apply's lines.
func agentTokens(t *testing.T, applied string) map[string]string {
	t.Helper()
	tokens := map[string]string{}
	for _, m := range regexp.MustCompile(`agent/(\S+) created \(agent token, shown once: (\S+)\)`).FindAllStringSubmatch(applied, -1) {
		tokens[m[1]] = m[2]
	}
	if len(tokens) == 0 {
		t.Fatalf("apply printed no agent token:\n%s", applied)
	}
	return tokens
}

// report has the router side of the agent whose token is given report
// that its router holds the agent's router document, but the bridges
// failed, as svcbridge router-sync does.
func (f *fleet) report(token string, failed ...wire.FailedBridge) {
	f.t.Helper()
	sync := &routersync.Pull{Server: f.URL, Token: token, Client: http.DefaultClient}
	ctx := context.Background()
	d, err := sync.Wait(ctx, "")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := sync.Report(ctx, wire.RouterReport{LastUpdated: &d.Seq, Version: d.Version, Failed: append([]wire.FailedBridge{}, failed...)}); err != nil {
		f.t.Fatal(err)
	}
}
