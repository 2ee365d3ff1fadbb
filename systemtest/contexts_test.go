package systemtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl's context verbs through the real binary: no server needed.
func TestCLIContexts(t *testing.T) {
	home := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + home}
	cfg := filepath.Join(home, "svcbridge", "config")
	cli := func(want int, args ...string) cliResult {
		t.Helper()
		r := runCLIEnv(t, "", env, args...)
		if r.code != want {
			t.Fatalf("svcbridge %s: want exit %d, got %s", strings.Join(args, " "), want, r)
		}
		return r
	}

	if r := cli(1, "config", "current-context"); !strings.Contains(r.stderr, "current-context is not set") {
		t.Errorf("current-context without a file: %s", r)
	}
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`current-context: prod
contexts:
  dev: {server: "http://127.0.0.1:8080", token: dev-secret}
  prod: {server: "https://prod.example", token: prod-secret}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	r := cli(0, "config", "get-contexts")
	if !cliHasLine(r.stdout, "CURRENT", "NAME", "SERVER") || !cliHasLine(r.stdout, "*", "prod", "https://prod.example") ||
		!cliHasLine(r.stdout, "dev", "http://127.0.0.1:8080") || strings.Contains(r.stdout, "secret") {
		t.Errorf("get-contexts:\n%s", r.stdout)
	}
	if r := cli(0, "config", "current-context"); r.stdout != "prod\n" {
		t.Errorf("current-context: %q", r.stdout)
	}
	if r := cli(0, "config", "use-context", "dev"); r.stdout != "Switched to context \"dev\".\n" {
		t.Errorf("use-context: %q", r.stdout)
	}
	if r := cli(0, "config", "current-context"); r.stdout != "dev\n" {
		t.Errorf("current-context after use-context dev: %q", r.stdout)
	}
	if r := cli(1, "config", "use-context", "nope"); !strings.Contains(r.stderr, `no context "nope" in `+cfg+` (contexts: dev, prod)`) {
		t.Errorf("use-context of a missing context: %s", r)
	}
	if r := cli(1, "config", "delete-context", "nope"); !strings.Contains(r.stderr, `no context "nope"`) {
		t.Errorf("delete-context of a missing context: %s", r)
	}
	if r := cli(0, "config", "delete-context", "dev"); !strings.Contains(r.stderr, "removed your current context") {
		t.Errorf("delete-context of the current context: %s", r)
	}
	cli(1, "config", "current-context")
	r = cli(0, "config", "get-contexts", "--no-headers")
	if cliHasLine(r.stdout, "dev", "http://127.0.0.1:8080") || r.stdout != "   prod  https://prod.example\n" {
		t.Errorf("get-contexts after delete-context dev:\n%s", r.stdout)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the configuration file after the edits: %v %v", fi, err)
	}
}

// kubectl's habits through the real binary: --no-headers, the bare
// --dry-run, get without a resource type, one error prefix.
func TestCLIKubectlHabits(t *testing.T) {
	s := newSystem(t, "sqlite", 0)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
	for _, c := range []struct {
		args   []string
		header string // the header's first column
		row    string // in a row
	}{
		{[]string{"get", "services"}, "NAME", "vendor"},
		{[]string{"get", "agents", "-o", "wide"}, "NAME", "hub"},
		{[]string{"events"}, "LAST SEEN", "Created"},
	} {
		with := cliMust(t, s.url, 0, c.args...).stdout
		without := cliMust(t, s.url, 0, append(c.args, "--no-headers")...).stdout
		// The same rows (ages may tick), and no header.
		_, rows, _ := strings.Cut(with, "\n")
		if !strings.HasPrefix(with, c.header) || strings.Count(without, "\n") != strings.Count(rows, "\n") ||
			!strings.Contains(without, c.row) || strings.Contains(without, c.header) {
			t.Errorf("svcbridge %s --no-headers:\n%s\nwithout it:\n%s", strings.Join(c.args, " "), without, with)
		}
	}

	// The bare --dry-run is kubectl's client dry run: nothing is written.
	if r := cliMust(t, s.url, 0, "delete", "service", "vendor", "--dry-run"); r.stdout != "service/vendor deleted (server dry run)\n" {
		t.Errorf("delete --dry-run: %s", r)
	}
	cliMust(t, s.url, 0, "get", "service", "vendor")
	if r := cliMust(t, s.url, 1, "delete", "service", "vendor", "--dry-run=maybe"); !strings.Contains(r.stderr, "want none, server or client") {
		t.Errorf("delete --dry-run=maybe: %s", r)
	}
	// One error prefix, kubectl's, whatever the exit code.
	if r := cliMust(t, s.url, 2, "get", "service", "nope"); !strings.HasPrefix(r.stderr, "error: ") || strings.Contains(r.stderr, "svcbridge:") {
		t.Errorf("get of a missing service: %s", r)
	}
	if r := cliMust(t, s.url, 1, "get"); !strings.HasPrefix(r.stderr, "error: you must specify the type of resource to get: services (svc), agents (agent) or microservices (ms)") {
		t.Errorf("get without a resource type: %s", r)
	}
}
