// Package systemtest drives svcbridge end to end: the real HTTP API, a real
// store (SQLite and PostgreSQL), a real in-process Temporal server and real
// workers.
package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"k8s.io/client-go/kubernetes"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/installation"
	"svcbridge/kube"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

const taskQueue = "svcbridge-test"

// processIDs name the workflows of svcbridge processes, which run with the
// default WORKFLOW_ID_PREFIX.
var processIDs = workflows.IDs{Prefix: "svcbridge/"}

// testAdminToken is the admin's API token in every system under test: the
// in-process API accepts it, and processes get it through a tokens file
// (tokensFile). Requests sent through adminClient carry it unless they set
// their own Authorization (asAdmin).
const testAdminToken = "systemtest-admin-token-0000000001"

// testViewerToken is a viewer's token the in-process API also accepts.
const testViewerToken = "systemtest-viewer-token-000000001"

// adminClient is the client of the tests' user requests (system.do,
// replicaClient, ...): it sends them as the admin. It has a transport of
// its own, so nothing process-wide changes; requests that carry their own
// token (agents, dev's admin.token, Compose) may use any client. It keeps
// a connection for each of a benchmark's 50 clients, as 50 clients would
// each keep theirs, where the default keeps 2 and the rest would connect
// anew for every request.
var adminClient = &http.Client{Transport: asAdmin{keepConnections(64)}}

// keepConnections is the default transport keeping up to n idle
// connections to a host.
func keepConnections(n int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = n
	return t
}

// asAdmin adds the admin's token to user requests without an
// Authorization header; the agents' pull API is left alone.
type asAdmin struct{ base http.RoundTripper }

func (a asAdmin) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, set := r.Header["Authorization"]; !set && strings.HasPrefix(r.URL.Path, "/api/v3/") && !strings.HasPrefix(r.URL.Path, "/api/v3/agent/") {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
	}
	return a.base.RoundTrip(r)
}

// tokensFile writes an AUTH_TOKENS_FILE holding the admin's token, for
// svcbridge processes.
func tokensFile(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte("tokens:\n  - {name: test-admin, role: admin, token: "+testAdminToken+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func testAuth() auth.Authenticator {
	a, err := auth.NewStatic(auth.StaticToken{Name: "test-admin", Role: "admin", Token: testAdminToken},
		auth.StaticToken{Name: "test-viewer", Role: "viewer", Token: testViewerToken})
	if err != nil {
		panic(err)
	}
	return a
}

// system is one svcbridge installation under test.
type system struct {
	t        testing.TB
	kube     kubernetes.Interface // Kubernetes control plane only
	kubeCfg  kube.Config
	store    *store.Store
	temporal client.Client
	wf       temporalclient.Client
	url      string
	plane    service.ControlPlane
	tags     service.TagRule
	workers  []sdkworker.Worker
	// ts, ids and queue are the Temporal server and the installation's
	// place in it: newSystem's own server, no prefix and taskQueue unless
	// an option says otherwise.
	ts    *temporaltest.TestServer
	ids   workflows.IDs
	queue string
	// timing is the workers' workflow timing (zero: production's).
	timing workflows.Timing
	// apiOptions, when set, changes the in-process API's options.
	apiOptions func(*api.Options)
}

type option func(*system)

// sharing makes the system one installation on ts among others, with its
// own workflow ID prefix and task queue.
func sharing(ts *temporaltest.TestServer, prefix, queue string) option {
	return func(s *system) { s.ts, s.ids, s.queue = ts, workflows.IDs{Prefix: prefix}, queue }
}

func kubernetesPlane(s *system) { s.plane = service.ControlPlaneKubernetes }

// noRetries makes a failed service wait minutes before its workflow tries
// again by itself, so that only a reconcile request retries it in a test.
func noRetries(s *system) { s.timing = workflows.Timing{RetryBackoff: 10 * time.Minute} }

// newSystem starts a store of dialect, a Temporal server, workers workers
// and the API.
func newSystem(t *testing.T, dialect string, workers int, opts ...option) *system {
	t.Helper()
	s := &system{t: t, plane: service.ControlPlaneRemote, tags: service.TagRule{Prefix: "service.iofog.org/tag"}, queue: taskQueue}
	for _, o := range opts {
		o(s)
	}
	s.store = storetest.Open(t, dialect)
	if s.ts == nil {
		s.ts = temporaltest.NewServer(temporaltest.WithT(t))
	}
	s.connect(s.ts)
	for range workers {
		s.startWorker()
	}
	s.serveAPI()
	return s
}

// newSystemOn is a system on an existing database and Temporal server,
// with no worker: the test runs worker processes itself.
func newSystemOn(t *testing.T, dbURL string, ts *temporaltest.TestServer) *system {
	t.Helper()
	s := &system{t: t, plane: service.ControlPlaneRemote, tags: service.TagRule{Prefix: "service.iofog.org/tag"},
		queue: taskQueue, ids: processIDs}
	st, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s.store = st
	s.connect(ts)
	s.serveAPI()
	return s
}

func (s *system) connect(ts *temporaltest.TestServer) {
	t := s.t
	s.temporal = ts.GetDefaultClient()
	if err := temporalclient.RegisterSearchAttributes(context.Background(), s.temporal, ts.GetDefaultNamespace()); err != nil {
		t.Fatalf("register search attributes: %v", err)
	}
	s.wf = s.installation().Workflows(s.temporal)
}

// installation is the system's installation, wired as the binary's roles
// wire theirs.
func (s *system) installation() installation.Installation {
	return installation.Installation{TaskQueue: s.queue, IDs: s.ids, ControlPlane: s.plane, Tags: s.tags, Kube: s.kubeCfg, Timing: s.timing}
}

// testWebUI is the Temporal Web UI the test API links services to.
const testWebUI = "http://ui.example:9999"

func (s *system) serveAPI() {
	t := s.t
	opts := s.installation().APIOptions(s.temporal, s.store, s.kube)
	opts.BridgePorts, opts.BridgePortsRaw = store.PortRange{First: 10024, Last: 65535}, "10024-65535"
	opts.Auth, opts.Namespace, opts.WebUI = testAuth(), "default", testWebUI
	if s.apiOptions != nil {
		s.apiOptions(&opts)
	}
	h := api.New(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.url = srv.URL
}

func (s *system) startWorker() sdkworker.Worker {
	w := s.installation().Worker(s.temporal, s.store, s.kube, nil)
	if err := w.Start(); err != nil {
		s.t.Fatalf("start worker: %v", err)
	}
	s.t.Cleanup(w.Stop)
	s.workers = append(s.workers, w)
	return w
}

// do sends a JSON request and returns the status and body.
func (s *system) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// must sends a request that has to answer want, and decodes the answer.
func (s *system) must(want int, method, path string, body any, into any) {
	s.t.Helper()
	code, out := s.do(method, path, body)
	if code != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, out)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
	}
}

type agentOut struct {
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	Token string `json:"token"`
}

func (s *system) agent(body map[string]any) agentOut {
	s.t.Helper()
	var a agentOut
	s.must(http.StatusCreated, "POST", "/api/v3/agents", body, &a)
	return a
}

func (s *system) microservice(body map[string]any) string {
	s.t.Helper()
	var m struct {
		UUID string `json:"uuid"`
	}
	s.must(http.StatusCreated, "POST", "/api/v3/microservices", body, &m)
	return m.UUID
}

type serviceOut struct {
	service.Service
	WorkflowID string `json:"workflowId"`
}

func (s *system) getService(name string) (serviceOut, bool) {
	s.t.Helper()
	code, body := s.do("GET", "/api/v3/services/"+name, nil)
	if code == http.StatusNotFound {
		return serviceOut{}, false
	}
	var out serviceOut
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil {
		s.t.Fatalf("GET service %s: %d %s", name, code, body)
	}
	return out, true
}

// waitFor polls cond until it holds or timeout passes.
func (s *system) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
}

// waitStatus waits until a service's latest generation settled in status.
func (s *system) waitStatus(name, status string) serviceOut {
	s.t.Helper()
	var svc serviceOut
	s.waitFor("service "+name+" "+status, 30*time.Second, func() (bool, string) {
		svc, _ = s.getService(name)
		done := svc.ObservedGeneration == svc.Generation && svc.ProvisioningStatus == status
		errText := ""
		if svc.ProvisioningError != nil {
			errText = *svc.ProvisioningError
		}
		return done, fmt.Sprintf("status %s gen %d/%d error %q", svc.ProvisioningStatus, svc.ObservedGeneration, svc.Generation, errText)
	})
	return svc
}

// waitAllReady waits until the service list holds n services, each with
// its latest generation settled ready, and returns that list.
func (s *system) waitAllReady(what string, n int, timeout time.Duration) []serviceOut {
	s.t.Helper()
	var list []serviceOut
	s.waitFor(what, timeout, func() (bool, string) {
		list = nil
		s.must(http.StatusOK, "GET", "/api/v3/services", nil, &list)
		var unsettled []string
		for _, svc := range list {
			if svc.ObservedGeneration != svc.Generation || svc.ProvisioningStatus != service.StatusReady {
				unsettled = append(unsettled, fmt.Sprintf("%s %s gen %d/%d", svc.Name, svc.ProvisioningStatus, svc.ObservedGeneration, svc.Generation))
			}
		}
		return len(list) == n && len(unsettled) == 0, fmt.Sprintf("%d services (want %d), unsettled: %v", len(list), n, unsettled)
	})
	return list
}

// router returns an agent's router config document.
func (s *system) router(agent string) map[string]any {
	s.t.Helper()
	var doc map[string]any
	s.must(http.StatusOK, "GET", "/api/v3/agents/"+agent+"/router", nil, &doc)
	return doc
}

// bridges returns the tcpListeners and tcpConnectors of an agent's router
// as raw JSON objects keyed by name.
func (s *system) bridges(agent string) (listeners, connectors map[string]json.RawMessage) {
	s.t.Helper()
	var doc struct {
		Bridges struct {
			TCPListeners  map[string]json.RawMessage `json:"tcpListeners"`
			TCPConnectors map[string]json.RawMessage `json:"tcpConnectors"`
		} `json:"bridges"`
	}
	s.must(http.StatusOK, "GET", "/api/v3/agents/"+agent+"/router", nil, &doc)
	return doc.Bridges.TCPListeners, doc.Bridges.TCPConnectors
}

// forDialects runs f against each store dialect as a subtest.
func forDialects(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

// temporalClient connects to a Temporal frontend for inspection.
func temporalClient(t testing.TB, hostPort, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
