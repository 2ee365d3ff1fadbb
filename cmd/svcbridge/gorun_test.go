package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"svcbridge/proctest"
)

// TestGoRunDev runs dev as the README does, `go run ./cmd/svcbridge dev`
// from the module's root, with an info log. Everything that reports its
// version (svcbridge version, /healthz, X-Svcbridge-Version) says the
// checkout's revision, as docs/cli.md promises, not "devel"; and a
// placement that fails, retried, is one WARN line with the service and
// the reason, and no ERROR line.
func TestGoRunDev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary with go run")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goRun := func(args ...string) *exec.Cmd {
		cmd := exec.Command("go", append([]string{"run", "./cmd/svcbridge"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()) // dev saves a CLI context
		return cmd
	}
	data := t.TempDir()
	dev := goRun("dev", "--data-dir", data, "--listen", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "0",
		"--database-url", "", "--log-level", "info", "--log-format", "text", "--debug-listen", "127.0.0.1:0")
	// go run does not pass a signal on to what it runs: its process group gets it.
	dev.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log := &proctest.Buffer{}
	dev.Stdout, dev.Stderr = log, log
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { dev.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-dev.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-dev.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("dev's output:\n%s", log)
		}
	})
	var url string
	apiLine := regexp.MustCompile(`API: +(http://\S+)/api/v3/services`)
	// The first go run compiles the Temporal server: minutes.
	proctest.WaitFor(t, "dev to serve", 10*time.Minute, func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("dev exited:\n%s", log)
		default:
		}
		m := apiLine.FindStringSubmatch(log.String())
		if m == nil {
			return false, log.String()
		}
		url = m[1]
		return true, ""
	})
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(token))

	t.Run("version", func(t *testing.T) {
		want := checkoutVersion(t, root)
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var health struct{ Version string }
		if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || health.Version != want {
			t.Errorf("/healthz version %q (%v), want %q", health.Version, err, want)
		}
		if got := resp.Header.Get("X-Svcbridge-Version"); got != want {
			t.Errorf("X-Svcbridge-Version %q, want %q", got, want)
		}
		out, err := goRun("version", "--server", url, "--token", admin).CombinedOutput()
		if got := string(out); err != nil || got != "Client: "+want+"\nServer: "+want+"\n" {
			t.Errorf("go run ./cmd/svcbridge version: %v\n%s\nwant client and server %s", err, got, want)
		}
	})

	t.Run("profiles on DEBUG_LISTEN", func(t *testing.T) {
		m := regexp.MustCompile(`msg="Go's profiles served" url=(http://127\.0\.0\.1:\d+/debug/pprof/)`).FindStringSubmatch(log.String())
		if m == nil {
			t.Fatalf("no log line naming the profiles' address:\n%s", log)
		}
		get := func(path string) (int, []byte) {
			t.Helper()
			resp, err := http.Get(m[1] + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		if code, b := get("heap?debug=1"); code != http.StatusOK || !strings.HasPrefix(string(b), "heap profile:") {
			t.Errorf("heap profile: %d %.200s", code, b)
		}
		// A CPU profile is gzipped protobuf, as go tool pprof reads it.
		if code, b := get("profile?seconds=1"); code != http.StatusOK || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("CPU profile: %d %.200q", code, b)
		}
		// The API's listener serves none of them.
		if code, _ := callAPI(t, url, admin, "GET", "/debug/pprof/heap?debug=1", nil); code != http.StatusNotFound {
			t.Errorf("the API's listener answers /debug/pprof/heap %d, want 404", code)
		}
	})

	t.Run("a failed placement is one WARN line", func(t *testing.T) {
		call := func(method, path string, body any, want int) []byte {
			t.Helper()
			code, b := callAPI(t, url, admin, method, path, body)
			if code != want {
				t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
			}
			return b
		}
		call("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}, http.StatusCreated)
		call("POST", "/api/v3/agents", map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}}, http.StatusCreated)
		call("POST", "/api/v3/services", map[string]any{"name": "lonely", "type": "agent", "resource": "fog-a", "targetPort": 80}, http.StatusCreated)
		status := func() string {
			var svc struct{ ProvisioningStatus string }
			json.Unmarshal(call("GET", "/api/v3/services/lonely", nil, http.StatusOK), &svc)
			return svc.ProvisioningStatus
		}
		proctest.WaitFor(t, "lonely ready", time.Minute, func() (bool, string) { s := status(); return s == "ready", s })
		// The agent loses its router: the service cannot be placed.
		call("PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}, http.StatusOK)
		proctest.WaitFor(t, "lonely's pass to fail three times", time.Minute, func() (bool, string) {
			var events []struct {
				Reason string
				Count  int
			}
			b := call("GET", "/api/v3/services/lonely/events", nil, http.StatusOK)
			json.Unmarshal(b, &events)
			return len(events) > 0 && events[0].Reason == "Failed" && events[0].Count >= 3, string(b)
		})
		var warned []string
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("an ERROR line:\n%s", line)
			}
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "service=lonely") {
				warned = append(warned, line)
			}
		}
		if len(warned) != 1 || !strings.Contains(warned[0], `msg="service reconcile failed"`) ||
			!strings.Contains(warned[0], `reason="Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent"`) {
			t.Errorf("want one WARN line with the service and the reason, have %d:\n%s", len(warned), strings.Join(warned, ""))
		}
	})
}

// checkoutVersion is the version a build of the checkout at root reports:
// devel+ its revision, -dirty when it has changes (untracked files too),
// as the go command records them.
func checkoutVersion(t *testing.T, root string) string {
	t.Helper()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("git %v: %v (not a checkout?)", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	v := "devel+" + git("rev-parse", "HEAD")[:12]
	if git("status", "--porcelain") != "" {
		v += "-dirty"
	}
	return v
}
