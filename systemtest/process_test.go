package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"svcbridge/cli"
	"svcbridge/pgtest"
	"svcbridge/porttest"
	"svcbridge/proctest"
	"svcbridge/wire"
)

// proc is a running svcbridge process.
type proc struct {
	cmd    *exec.Cmd
	output *strings.Builder
	mu     *sync.Mutex
	done   chan error
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(proctest.Svcbridge(t), args...)
	// dev writes the CLI's configuration file: never the user's.
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	p := &proc{cmd: cmd, output: &strings.Builder{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	// done is sent once the output is all read: a test reading it after
	// the exit sees every line.
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-scanned
		p.done <- err
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.out())
		}
	})
	return p
}

func (p *proc) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// waitHTTP waits until url answers 200.
func waitHTTP(t *testing.T, url string, p *proc) {
	t.Helper()
	waitAnswer(t, url, p, "answered", func([]byte) bool { return true })
}

// waitWorkerPolling waits until the API at url says a worker polls its
// task queue (/readyz's worker "ok"): a worker's first poll reaches
// Temporal a moment after it starts, and until then the API rightly says
// none polls.
func waitWorkerPolling(t *testing.T, url string, p *proc) {
	t.Helper()
	waitAnswer(t, url+"/readyz", p, "said a worker polls", func(body []byte) bool {
		var r wire.Readiness
		return json.Unmarshal(body, &r) == nil && r.Worker == "ok"
	})
}

// waitAnswer waits until url answers 200 with a body that ok accepts
// (said is what that means, for the failure).
func waitAnswer(t *testing.T, url string, p *proc, said string, ok func(body []byte) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK && ok(body) {
				return
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("process exited (%v) before %s %s:\n%s", err, url, said, p.out())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s had not %s within 90s:\n%s", url, said, p.out())
}

// TestDevKeepsDataAcrossRestarts runs the README's command: everything
// answers, Ctrl-C stops it cleanly, and a restart finds the data.
func TestDevKeepsDataAcrossRestarts(t *testing.T) {
	dataDir := t.TempDir()
	apiPort, temporalPort, uiPort := porttest.Free(t), porttest.Free(t), porttest.Free(t)
	args := []string{"dev", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--temporal-port", fmt.Sprint(temporalPort), "--ui-port", fmt.Sprint(uiPort)}
	cfgHome := t.TempDir()
	env := []string{"DATABASE_URL=", "AUTH_TOKENS_FILE=" + tokensFile(t), "XDG_CONFIG_HOME=" + cfgHome}
	dev := start(t, env, args...)
	s := &system{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}
	waitHTTP(t, s.url+"/readyz", dev)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/", uiPort), dev)
	for _, want := range []string{s.url, fmt.Sprintf("127.0.0.1:%d", temporalPort), fmt.Sprintf("http://127.0.0.1:%d", uiPort)} {
		if !strings.Contains(dev.out(), want) {
			t.Errorf("dev did not print %s:\n%s", want, dev.out())
		}
	}

	// A second dev on the same data directory (other ports) exits at once,
	// naming the directory and the running one; the first keeps serving.
	second := start(t, env, "dev", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", porttest.Free(t)),
		"--temporal-port", fmt.Sprint(porttest.Free(t)), "--ui-port", fmt.Sprint(porttest.Free(t)))
	select {
	case err := <-second.done:
		want := fmt.Sprintf("data directory %s is in use by another svcbridge dev (pid %d)", dataDir, dev.cmd.Process.Pid)
		if err == nil || !strings.Contains(second.out(), want) {
			t.Errorf("a second dev on the data directory exited with %v, want an error saying %q:\n%s", err, want, second.out())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a second dev on the same data directory kept running:\n%s", second.out())
	}
	waitHTTP(t, s.url+"/readyz", dev)

	// dev made an admin token, readable by its owner only, and it works.
	tokenPath := filepath.Join(dataDir, "admin.token")
	fi, err := os.Stat(tokenPath)
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token file mode %v, want 0600", fi.Mode().Perm())
	}
	adminToken, _ := os.ReadFile(tokenPath)
	req, _ := http.NewRequest("GET", s.url+"/api/v3/services", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(adminToken)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the admin token from %s: %v %v", tokenPath, resp, err)
	}
	if !strings.Contains(dev.out(), tokenPath) {
		t.Errorf("dev did not say where its admin token is:\n%s", dev.out())
	}

	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
	s.waitStatus("vendor", "ready")
	// A service links its workflow in dev's own Web UI.
	var vendor struct {
		WorkflowURL string `json:"workflowUrl"`
	}
	s.must(http.StatusOK, "GET", "/api/v3/services/vendor", nil, &vendor)
	if want := fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows/svcbridge%%2Fservice%%2Fvendor", uiPort); vendor.WorkflowURL != want {
		t.Errorf("vendor's workflowUrl %q, want %q", vendor.WorkflowURL, want)
	}

	// dev saved its server and token as the CLI's current context: the
	// CLI works from any directory, with no setting.
	cfgPath := filepath.Join(cfgHome, "svcbridge", "config")
	if !strings.Contains(dev.out(), "CLI context:     dev in "+cfgPath+" (current)") {
		t.Errorf("dev did not say it saved the CLI context:\n%s", dev.out())
	}
	cliIn := func(cfg string, args ...string) cliResult {
		cmd := exec.Command(proctest.Svcbridge(t), args...)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfg}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		return r
	}
	if r := cliIn(cfgHome, "get", "services", "-o", "name"); r.code != 0 || r.stdout != "service/vendor\n" {
		t.Errorf("the CLI with dev's context, elsewhere: %s", r)
	}
	// Without it, a 401 says where the CLI looked and what to do.
	if r := cliIn(t.TempDir(), "get", "services", "--server", s.url); r.code != 2 ||
		!strings.Contains(r.stderr, "(401 ") || !strings.Contains(r.stderr, "no token was found (looked at --token, SVCBRIDGE_TOKEN, ") ||
		!strings.Contains(r.stderr, "run 'svcbridge login --server "+s.url+" --token TOKEN'") {
		t.Errorf("the CLI without a token: %s", r)
	}

	// Prometheus sees the API, the provisioning and the Temporal SDK.
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`svcbridge_http_requests_total{code="201",method="POST",route="/api/v3/services"} 1`,
		`svcbridge_service_reconciles_total{outcome="ready"}`,
		`svcbridge_router_config_writes_total{router="agent"}`,
		`svcbridge_service_ready_seconds_count 1`,
		`temporal_request_total{`,
		`temporal_worker_task_slots_available{`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	dev.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-dev.done:
		if err != nil {
			t.Fatalf("dev exited with %v after SIGINT:\n%s", err, dev.out())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("dev did not stop within 60s of SIGINT:\n%s", dev.out())
	}

	// The user switched to another context: dev's restart adds its own
	// without taking over.
	if err := cli.SaveContext(cfgPath, "prod", cli.Context{Server: "https://prod.example"}); err != nil {
		t.Fatal(err)
	}
	dev2 := start(t, env, args...)
	waitHTTP(t, s.url+"/readyz", dev2)
	if !strings.Contains(dev2.out(), "CLI context:     dev in "+cfgPath+" (not current: svcbridge config use-context dev)") {
		t.Errorf("the restarted dev did not say its context is not current:\n%s", dev2.out())
	}
	if r := cliIn(cfgHome, "config", "current-context"); r.stdout != "prod\n" {
		t.Errorf("dev took over the current context: %s", r)
	}
	got := s.waitStatus("vendor", "ready")
	if got.BridgePort != 10024 {
		t.Errorf("after restart bridgePort %d, want 10024", got.BridgePort)
	}
	if again, _ := os.ReadFile(tokenPath); string(again) != string(adminToken) {
		t.Errorf("the admin token changed across the restart")
	}
	if l, _ := s.bridges("hub"); l["vendor-listener"] == nil {
		t.Errorf("hub listener lost across the restart")
	}
	// The workflow history survived too: the restarted server still knows
	// the first run of the service's workflow.
	c := temporalClient(t, fmt.Sprintf("127.0.0.1:%d", temporalPort), "default")
	if _, err := c.DescribeWorkflowExecution(context.Background(), processIDs.Service("vendor"), ""); err != nil {
		t.Errorf("workflow of vendor unknown after restart: %v", err)
	}
}

// TestKilledWorkerConverges kills a worker process with SIGKILL while it
// provisions many services; another worker finishes the job and no router
// entry is missing or stale.
func TestKilledWorkerConverges(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	dbURL := pgtest.NewDB(t)
	s := newSystemOn(t, dbURL, ts)
	newFleet(s)
	env := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + ts.GetFrontendHostPort(), "AUTH_TOKENS_FILE=" + tokensFile(t),
		"TEMPORAL_NAMESPACE=" + ts.GetDefaultNamespace(), "TASK_QUEUE=" + taskQueue, "RESYNC_INTERVAL=1s"}
	w1 := start(t, env, "worker")

	const n = 100
	for i := range n {
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": fmt.Sprintf("svc-%03d", i), "type": "external", "resource": "203.0.113.10", "targetPort": 2000 + i}, nil)
		if i == n/3 {
			// Some services are done, others in flight: kill without warning.
			s.waitStatus("svc-000", "ready")
			w1.cmd.Process.Signal(syscall.SIGKILL)
			<-w1.done
		}
	}
	// Delete a few that may be half-provisioned, so the new worker must
	// clean as well as create.
	for i := 0; i < n; i += 10 {
		s.must(http.StatusNoContent, "DELETE", fmt.Sprintf("/api/v3/services/svc-%03d", i), nil, nil)
	}
	start(t, env, "worker")

	for i := range n {
		name := fmt.Sprintf("svc-%03d", i)
		if i%10 == 0 {
			continue
		}
		s.waitStatus(name, "ready")
	}
	s.waitFor("the hub to hold exactly the live services", 60*time.Second, func() (bool, string) {
		listeners, connectors := s.bridges("hub")
		for i := range n {
			name := fmt.Sprintf("svc-%03d", i)
			live := i%10 != 0
			if (listeners[name+"-listener"] != nil) != live || (connectors[name+"-connector"] != nil) != live {
				return false, fmt.Sprintf("%s: listener %v connector %v, live %v", name, listeners[name+"-listener"] != nil, connectors[name+"-connector"] != nil, live)
			}
		}
		return len(listeners) == n-n/10 && len(connectors) == n-n/10, fmt.Sprintf("%d listeners, %d connectors", len(listeners), len(connectors))
	})
}
