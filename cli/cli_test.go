package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

func TestCLIClientSendsTokenAndDecodesErrors(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/api/v3/services/dup":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"name":"DuplicatePropertyError","message":"Service with name dup already exists"}`))
		case "/api/v3/services/boom":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("upstream exploded"))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"name":"NotFoundError","message":"Route GET ` + r.URL.Path + ` not found"}`))
		}
	}))
	defer srv.Close()
	c := &Client{Server: srv.URL, Token: "s3cret"}
	ctx := context.Background()

	_, err := c.GetService(ctx, "dup")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Name != "DuplicatePropertyError" || ae.Message != "Service with name dup already exists" {
		t.Fatalf("409: %#v", err)
	}
	if ExitCode(err) != ExitRejected {
		t.Errorf("a 4xx exits %d, want %d", ExitCode(err), ExitRejected)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization %q", gotAuth)
	}
	if _, err := c.GetService(ctx, "boom"); ExitCode(err) != ExitOther || !strings.Contains(err.Error(), "upstream exploded (500)") {
		t.Errorf("500: %v (exit %d)", err, ExitCode(err))
	}

	c.Token = ""
	c.GetService(ctx, "dup")
	if gotAuth != "" {
		t.Errorf("without a token, Authorization %q", gotAuth)
	}

	down := &Client{Server: "http://127.0.0.1:1"}
	if _, err := down.GetService(ctx, "dup"); ExitCode(err) != ExitUnreachable {
		t.Errorf("unreachable: %v (exit %d)", err, ExitCode(err))
	}
}

func TestCLIConnectionSettings(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "admin.token"), []byte("from-file\n"), 0o600)
	t.Setenv("DATA_DIR", dir)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SVCBRIDGE_TOKEN", "")
	t.Setenv("SVCBRIDGE_SERVER", "")
	cmd := &cobra.Command{}
	var c conn
	c.flags(cmd)
	cl, err := c.client(cmd)
	if err != nil || cl.Server != DefaultServer || cl.Token != "from-file" {
		t.Errorf("defaults: %+v %v", cl, err)
	}
	t.Setenv("SVCBRIDGE_TOKEN", "from-env")
	t.Setenv("SVCBRIDGE_SERVER", "10.0.0.1:9000/")
	if cl, _ := c.client(cmd); cl.Server != "http://10.0.0.1:9000" || cl.Token != "from-env" {
		t.Errorf("environment: %+v", cl)
	}
	cmd.Flags().Set("server", "https://svcbridge.example")
	cmd.Flags().Set("token", "from-flag")
	if cl, _ := c.client(cmd); cl.Server != "https://svcbridge.example" || cl.Token != "from-flag" {
		t.Errorf("flags: %+v", cl)
	}
	cmd.Flags().Set("server", "ftp://x")
	if _, err := c.client(cmd); ExitCode(err) != ExitOther {
		t.Errorf("ftp server: %v", err)
	}
}

func TestCLISplitDocuments(t *testing.T) {
	docs, err := splitDocuments("f.yaml", []byte(`---
kind: Agent
metadata: {name: hub}
---
# only a comment
---
kind: Service
metadata:
  name: checkout # a comment
  tags: [checkout]
spec: {type: external, resource: "10.0.0.1", targetPort: 443}
---
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].kind != "Agent" || docs[0].name != "hub" || docs[1].kind != "Service" || docs[1].name != "checkout" || docs[1].index != 3 {
		t.Fatalf("documents: %+v", docs)
	}
	// What is sent is the document alone, and means the same.
	var back map[string]any
	if err := yaml.Unmarshal(docs[1].body, &back); err != nil || back["spec"].(map[string]any)["resource"] != "10.0.0.1" || strings.Contains(string(docs[1].body), "hub") {
		t.Errorf("document body:\n%s", docs[1].body)
	}
	if docs[1].ref() != "service/checkout" || (document{kind: "AgentConfig", name: "a"}).ref() != "agent/a" {
		t.Errorf("refs %s", docs[1].ref())
	}
	if _, err := splitDocuments("bad.yaml", []byte("kind: Service\nmetadata: [\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml, document 1") {
		t.Errorf("a broken document: %v", err)
	}
}

func TestCLIYAMLKeepsTheAPIOrderAndTypes(t *testing.T) {
	out, err := jsonToYAML([]byte(`{"name":"checkout","port":"10024","flag":"true","n":10024,"tags":[],"m":{},"e":null,"html":"\u003cb\u003e","list":[{"b":1,"a":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `name: checkout
port: "10024"
flag: "true"
n: 10024
tags: []
m: {}
e: null
html: <b>
list:
  - b: 1
    a: 2
`
	if string(out) != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", out, want)
	}
}

func TestCLIOpenPortsAreSortedAsJujuPrintsThem(t *testing.T) {
	var rc RouterConfig
	json.Unmarshal([]byte(`{"bridges":{"tcpListeners":{"b-listener":{"port":"10025"},"a-listener":{"port":"10024"},"human":{"port":"9000"},"dup":{"port":"10024"}}}}`), &rc)
	if got := strings.Join(openPorts(rc), ","); got != "9000/tcp,10024/tcp,10025/tcp" {
		t.Errorf("open ports %s", got)
	}
}

func TestCLIPortRanges(t *testing.T) {
	hub := make([]string, 200)
	for i := range hub {
		hub[i] = fmt.Sprintf("%d/tcp", 10024+i)
	}
	for _, c := range []struct {
		ports []string
		want  string
	}{
		{nil, ""},
		{[]string{"10024/tcp"}, "10024/tcp"},
		// Two adjacent ports read as easily listed as ranged.
		{[]string{"10024/tcp", "10025/tcp"}, "10024/tcp,10025/tcp"},
		{[]string{"10024/tcp", "10025/tcp", "10026/tcp"}, "10024-10026/tcp"},
		{hub, "10024-10223/tcp"},
		{[]string{"9000/tcp", "10024/tcp", "10025/tcp", "10026/tcp", "10028/tcp", "10029/tcp", "10031/tcp", "10032/tcp", "10033/tcp", "10034/tcp"},
			"9000/tcp,10024-10026/tcp,10028/tcp,10029/tcp,10031-10034/tcp"},
		// A port that is not a number (a misconfigured router) breaks a run.
		{[]string{"10024/tcp", "10025/tcp", "amqp/tcp", "10026/tcp"}, "10024/tcp,10025/tcp,amqp/tcp,10026/tcp"},
	} {
		if got := portRanges(c.ports); got != c.want {
			t.Errorf("portRanges(%v) = %q, want %q", c.ports, got, c.want)
		}
	}
}

// status shows who may reach each Kubernetes Service next to its endpoint,
// as Juju shows exposure next to the open ports.
func TestCLIStatusShowsAllowedCIDRs(t *testing.T) {
	var svcs []Service
	json.Unmarshal([]byte(`[
		{"name":"lb","type":"external","bridgePort":10024,"servicePort":443,"k8sType":"LoadBalancer","serviceEndpoint":"203.0.113.9",
		 "provisioningStatus":"ready","kubernetes":{"loadBalancerSourceRanges":["10.0.0.0/8","192.0.2.0/24"]}},
		{"name":"open","type":"external","bridgePort":10025,"servicePort":80,"k8sType":"LoadBalancer","provisioningStatus":"pending","kubernetes":null},
		{"name":"np","type":"external","bridgePort":10026,"servicePort":22,"k8sType":"NodePort","provisioningStatus":"pending"},
		{"name":"inside","type":"external","bridgePort":10027,"servicePort":80,"k8sType":"ClusterIP","provisioningStatus":"pending"}]`), &svcs)
	v := statusView{}
	for _, s := range svcs {
		v.Services = append(v.Services, statusService{Name: s.Name, Type: s.Type, Endpoint: endpoint(s), AllowedFrom: allowedFrom(s), Status: status(s)})
	}
	var b bytes.Buffer
	if err := printStatus(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"SERVICE  TYPE      BACKEND  BRIDGE-PORT  ENDPOINT         ALLOWED-FROM             STATUS",
		"lb       external  -        0            203.0.113.9:443  10.0.0.0/8,192.0.2.0/24  ready",
		"open     external  -        0            -                any                      pending",
		"np       external  -        0            -                any                      pending",
		"inside   external  -        0            -                cluster                  pending",
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("status lacks %q:\n%s", line, b.String())
		}
	}
	b.Reset()
	printStatus(&b, statusView{Services: []statusService{{Name: "remote", Type: "external", Status: "ready"}}})
	if strings.Contains(b.String(), "ALLOWED-FROM") {
		t.Errorf("ALLOWED-FROM shown without any Kubernetes Service:\n%s", b.String())
	}
}

func TestCLIExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{&APIError{Status: 400}, 2},
		{&APIError{Status: 503}, 1},
		{&FailedError{Service: "a", Message: "m"}, 3},
		{&TimeoutError{After: time.Second}, 4},
		{&UnreachableError{Server: "s", Err: errors.New("refused")}, 5},
		{fmt.Errorf("wrapped: %w", &FailedError{}), 3},
		{join([]error{&APIError{Status: 404}, &TimeoutError{}, errors.New("x")}), 4},
		{join([]error{&FailedError{}, &APIError{Status: 409}}), 3},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// fakeService serves GET /api/v3/services/{name} from a script of states.
type fakeService struct {
	mu     sync.Mutex
	states []string // JSON answers, the last one repeats; "404" answers 404
	router string   // GET /api/v3/agents/hub/router
	gets   int
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/router") {
		w.Write([]byte(f.router))
		return
	}
	s := f.states[min(f.gets, len(f.states)-1)]
	f.gets++
	if s == "404" {
		w.WriteHeader(404)
		w.Write([]byte(`{"name":"NotFoundError","message":"Service with name a not found"}`))
		return
	}
	w.Write([]byte(s))
}

func svcState(status string, gen, observed int, extra string) string {
	return fmt.Sprintf(`{"name":"a","provisioningStatus":%q,"generation":%d,"observedGeneration":%d,"bridgePort":10024,"serviceEndpoint":"hub.example.com","servicePort":10024,"updatedAt":"2026-01-01T00:00:0%dZ"%s}`,
		status, gen, observed, observed, extra)
}

func TestCLIWaitFollowsTheService(t *testing.T) {
	dist := func(listening bool) string {
		return fmt.Sprintf(`,"distribution":[{"agent":"u1","agentName":"hub","listening":true,"wanted":true,"reason":"hub"},{"agent":"u2","agentName":"fog-a","listening":%v,"wanted":true,"reason":"t"}]`, listening)
	}
	wait := func(f *fakeService, target *waitTarget, timeout time.Duration) (string, string, error) {
		srv := httptest.NewServer(f)
		defer srv.Close()
		var out, progress bytes.Buffer
		w := &waiter{c: &Client{Server: srv.URL}, out: &out, progress: &progress, interval: time.Millisecond}
		err := w.wait(context.Background(), []*waitTarget{target}, timeout)
		return out.String(), progress.String(), err
	}

	f := &fakeService{states: []string{svcState("pending", 1, 0, dist(false)), svcState("ready", 1, 1, dist(false)), svcState("ready", 1, 1, dist(true))}}
	out, progress, err := wait(f, &waitTarget{name: "a", goal: untilReady}, 5*time.Second)
	if err != nil || out != "service/a ready (bridgePort 10024, endpoint hub.example.com:10024, 1/2 agents listening)\n" {
		t.Errorf("ready: %q %v", out, err)
	}
	if !strings.Contains(progress, "a: reconciling generation 1 (observed 0, pending), 1/2 agents listening") || !strings.HasSuffix(progress, "\r\033[K") {
		t.Errorf("progress %q", progress)
	}

	f = &fakeService{states: []string{svcState("failed", 2, 2, `,"provisioningError":"Agent fog-a has routerMode none"`)}}
	_, _, err = wait(f, &waitTarget{name: "a", goal: untilReady}, 5*time.Second)
	if ExitCode(err) != ExitFailed || err.Error() != "service a failed: Agent fog-a has routerMode none" {
		t.Errorf("failed: %v", err)
	}

	f = &fakeService{states: []string{svcState("pending", 2, 1, "")}}
	_, _, err = wait(f, &waitTarget{name: "a", goal: untilReady}, 50*time.Millisecond)
	if ExitCode(err) != ExitTimeout || !strings.Contains(err.Error(), "timed out after 50ms; service a: reconciling generation 2 (observed 1, pending)") {
		t.Errorf("timeout: %v", err)
	}

	// A reconcile is done once a pass that read the request finished: the
	// ready status of a pass that began before it is not the answer.
	f = &fakeService{states: []string{svcState("ready", 1, 1, `,"observedReconcileRequest":1`),
		svcState("ready", 1, 1, `,"observedReconcileRequest":1`),
		svcState("failed", 1, 1, `,"observedReconcileRequest":2,"provisioningError":"Agent fog-a is gone"`)}}
	_, _, err = wait(f, &waitTarget{name: "a", goal: untilReconciled, request: 2}, 5*time.Second)
	if ExitCode(err) != ExitFailed || f.gets != 3 {
		t.Errorf("reconciled after %d reads: %v", f.gets, err)
	}

	// Gone: 404, and then no router holds its objects.
	f = &fakeService{states: []string{"404"}, router: `{"bridges":{"tcpListeners":{"a-listener":{"port":"10024"}}}}`}
	srv := httptest.NewServer(f)
	defer srv.Close()
	w := &waiter{c: &Client{Server: srv.URL}, out: &bytes.Buffer{}, interval: time.Millisecond}
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
		f.router = `{"bridges":{"tcpListeners":{}}}`
		f.mu.Unlock()
	}()
	if err := w.wait(context.Background(), []*waitTarget{{name: "a", goal: untilGone, routers: []string{"hub"}}}, 5*time.Second); err != nil ||
		!strings.Contains(w.out.(*bytes.Buffer).String(), "service/a deleted and removed from every router") {
		t.Errorf("gone: %v %q", err, w.out)
	}
}

// runCLI runs the command line args in-process, as the binary does, and
// returns its exit code and what it printed.
func runCLI(args ...string) (code int, stdout, stderr string) {
	code = -1
	root := &cobra.Command{Use: "svcbridge", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(Commands(Options{Exit: func(c int) { code = c }})...)
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs(args)
	err := root.Execute()
	if code == -1 {
		code = ExitCode(err)
		if err != nil { // main prints it
			PrintErrors(&e, err)
		}
	}
	return code, o.String(), e.String()
}

// TestCLICommandsExitWithTheirCode runs the commands in-process against a
// fake API.
func TestCLICommandsExitWithTheirCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/v3/services/checkout":
			w.WriteHeader(404)
			w.Write([]byte(`{"name":"NotFoundError","message":"Service with name checkout not found"}`))
		case r.Method == "POST" && r.URL.Path == "/api/v3/services/yaml":
			w.WriteHeader(400)
			w.Write([]byte(`{"name":"ValidationError","message":"Invalid microservice NAME 'orders/checkout'"}`))
		case r.Method == "POST" && r.URL.Path == "/api/v3/agents/yaml":
			w.WriteHeader(201)
			w.Write([]byte(`{"uuid":"u1","name":"hub","token":"tok"}`))
		default:
			w.WriteHeader(404)
			w.Write([]byte(`{"name":"NotFoundError","message":"Agent hub not found"}`))
		}
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "f.yaml")
	os.WriteFile(file, []byte("kind: Agent\nmetadata: {name: hub}\n---\nkind: Service\nmetadata: {name: checkout}\nspec: {type: microservice, resource: orders/checkout, targetPort: 8080}\n"), 0o600)

	code, stdout, stderr := runCLI("apply", "-f", file, "--server", srv.URL)
	if code != ExitRejected || stdout != "agent/hub created (agent token, shown once: tok)\n" ||
		stderr != "error: service/checkout ("+file+", document 2): Invalid microservice NAME 'orders/checkout' (400 ValidationError)\n" {
		t.Errorf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI("describe", "service", "checkout", "--server", srv.URL)
	if code != ExitRejected || stderr != "error: Service with name checkout not found (404 NotFoundError)\n" {
		t.Errorf("describe: exit %d %q", code, stderr)
	}
	if code, _, _ = runCLI("get", "widgets", "--server", srv.URL); code != ExitOther {
		t.Errorf("get widgets: exit %d", code)
	}
	if code, _, _ = runCLI("status", "--server", "http://127.0.0.1:1"); code != ExitUnreachable {
		t.Errorf("status against a closed port: exit %d", code)
	}
}

// The CLI reads every page of a list: ?limit=, then each answer's
// X-Continue token as ?continue=, until an answer has none.
func TestCLIListsReadEveryPage(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		switch r.URL.Query().Get("continue") {
		case "":
			w.Header().Set("X-Continue", "t1")
			w.Write([]byte(`[{"name":"a"},{"name":"b"}]`))
		case "t1":
			w.Header().Set("X-Continue", "t2")
			w.Write([]byte(`[{"name":"c"}]`))
		default:
			w.Write([]byte(`[{"name":"d"}]`))
		}
	}))
	defer srv.Close()
	svcs, err := (&Client{Server: srv.URL}).ListServices(context.Background())
	var names []string
	for _, s := range svcs {
		names = append(names, s.Name)
	}
	if err != nil || strings.Join(names, ",") != "a,b,c,d" {
		t.Errorf("services %v %v", names, err)
	}
	if want := "limit=500|continue=t1&limit=500|continue=t2&limit=500"; strings.Join(queries, "|") != want {
		t.Errorf("queries %q, want %q", strings.Join(queries, "|"), want)
	}
}
