package systemtest

import (
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
	r = cli(0, "config", "get-contexts")
	if cliHasLine(r.stdout, "dev", "http://127.0.0.1:8080") || !cliHasLine(r.stdout, "prod", "https://prod.example") {
		t.Errorf("get-contexts after delete-context dev:\n%s", r.stdout)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the configuration file after the edits: %v %v", fi, err)
	}
}
