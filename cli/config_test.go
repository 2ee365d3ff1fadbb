package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestCLISettingsPickServerAndTokenAsKubectlDoes(t *testing.T) {
	cfg := Config{CurrentContext: "dev", Contexts: map[string]*Context{
		"dev":  {Server: "http://127.0.0.1:8080", Token: "dev-token"},
		"prod": {Server: "https://prod.example/", Token: "prod-token"},
	}}
	base := settings{config: cfg, configPath: "/cfg", contextName: "dev", dataDirPath: ".svcbridge/admin.token"}
	for _, c := range []struct {
		name              string
		edit              func(*settings)
		server, token     string
		from, hintContain string
	}{
		{"the current context", func(*settings) {}, "http://127.0.0.1:8080", "dev-token", "context dev in /cfg", ""},
		{"--context", func(s *settings) { s.contextName, s.contextExplicit = "prod", true }, "https://prod.example", "prod-token", "context prod in /cfg", ""},
		{"the environment wins", func(s *settings) { s.envServer, s.envToken = "10.0.0.1:9000", "env-token" }, "http://10.0.0.1:9000", "env-token", "SVCBRIDGE_TOKEN", ""},
		{"flags win over the environment", func(s *settings) { s.envToken, s.flagToken, s.flagServer = "env-token", "flag-token", "https://x" }, "https://x", "flag-token", "--token", ""},
		// A context's token never goes to another server.
		{"another server gets no context token", func(s *settings) { s.envServer = "http://other:8080" }, "http://other:8080", "", "",
			"context dev in /cfg (not used: it is for http://127.0.0.1:8080)"},
		{"the context's server in another spelling", func(s *settings) { s.flagServer = "127.0.0.1:8080/" }, "http://127.0.0.1:8080", "dev-token", "context dev in /cfg", ""},
		{"dev's token file last", func(s *settings) { s.contextName, s.dataDirToken = "", "file-token" }, DefaultServer, "file-token", ".svcbridge/admin.token", ""},
		{"nothing", func(s *settings) { s.contextName = "" }, DefaultServer, "", "", "looked at --token, SVCBRIDGE_TOKEN, /cfg (no context), .svcbridge/admin.token"},
		// A current context that was removed: as if none.
		{"a dangling current context", func(s *settings) { s.contextName = "gone" }, DefaultServer, "", "", "/cfg (no context)"},
	} {
		s := base
		c.edit(&s)
		conn, err := s.resolve()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if conn.server != c.server || conn.token != c.token || conn.tokenFrom != c.from {
			t.Errorf("%s: %s %q from %q, want %s %q from %q", c.name, conn.server, conn.token, conn.tokenFrom, c.server, c.token, c.from)
		}
		hint := conn.unauthorizedHint()
		if !strings.Contains(hint, "svcbridge login --server "+c.server) || !strings.Contains(hint, c.hintContain) {
			t.Errorf("%s: 401 hint %q lacks %q", c.name, hint, c.hintContain)
		}
		if c.from != "" && !strings.Contains(hint, "refused the token from "+c.from) {
			t.Errorf("%s: 401 hint %q", c.name, hint)
		}
	}
	s := base
	s.contextName, s.contextExplicit = "nope", true
	if _, err := s.resolve(); ExitCode(err) != ExitOther || !strings.Contains(err.Error(), `no context "nope" in /cfg (contexts: dev, prod)`) {
		t.Errorf("an unknown --context: %v", err)
	}
}

func TestCLILoginSavesAContextEveryCommandUses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"name":"AuthenticationError","message":"Invalid token"}`))
			return
		}
		w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("SVCBRIDGE_TOKEN", "")
	t.Setenv("SVCBRIDGE_SERVER", "")
	t.Setenv("DATA_DIR", t.TempDir())
	login := func(stdin string, args ...string) (string, int) {
		code := 0
		cmd := loginCmd(Options{Exit: func(c int) { code = c }})
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetIn(strings.NewReader(stdin))
		cmd.SetArgs(args)
		if err := cmd.ExecuteContext(context.Background()); err != nil && code == 0 {
			code = ExitOther
		}
		return out.String(), code
	}
	path := filepath.Join(cfgHome, "svcbridge", "config")
	if out, code := login("", "--server", srv.URL, "--token", "bad"); code != ExitRejected || !strings.Contains(out, "nothing was saved") {
		t.Errorf("login with a refused token: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a refused login wrote %s", path)
	}
	if out, code := login("good\n", "--server", srv.URL, "--context", "lab"); code != 0 || !strings.Contains(out, "context lab saved in "+path) {
		t.Fatalf("login with the token on stdin: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config file: %v %v", fi, err)
	}
	cmd := &cobra.Command{}
	var c conn
	c.flags(cmd)
	cl, err := c.client(cmd)
	if err != nil || cl.Server != srv.URL || cl.Token != "good" {
		t.Errorf("a command after login: %+v %v", cl, err)
	}
	// A second login keeps the first context.
	login("", "--server", "http://127.0.0.1:1", "--token", "x")
	if cfg, _ := LoadConfig(path); cfg.CurrentContext != "lab" || cfg.Contexts["lab"].Token != "good" {
		t.Errorf("after a failed second login: %+v", cfg)
	}
	if err := SaveContext(path, "dev", Context{Server: DefaultServer, Token: "d"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := LoadConfig(path); cfg.CurrentContext != "dev" || cfg.Contexts["lab"] == nil || cfg.Contexts["dev"].Token != "d" {
		t.Errorf("after saving dev: %+v", cfg)
	}
	// A 401 says where the token came from and what to do.
	cmd.Flags().Set("context", "lab")
	cl, _ = c.client(cmd)
	cl.Token = "stale"
	_, err = cl.ListServices(context.Background())
	if ExitCode(err) != ExitRejected || !strings.Contains(err.Error(), "Invalid token (401 AuthenticationError): the server refused the token from context lab in "+path+"; run 'svcbridge login --server "+srv.URL) {
		t.Errorf("a 401: %v", err)
	}
}

func TestCLIGetContextsMarksTheCurrentAndPrintsNoToken(t *testing.T) {
	cfg := Config{CurrentContext: "prod", Contexts: map[string]*Context{
		"prod": {Server: "https://prod.example", Token: "secret"}, "dev": {Server: "http://127.0.0.1:8080", Token: "secret"}}}
	for _, c := range []struct {
		noHeaders bool
		want      string
	}{
		{false, "CURRENT  NAME  SERVER\n         dev   http://127.0.0.1:8080\n*        prod  https://prod.example\n"},
		{true, "   dev   http://127.0.0.1:8080\n*  prod  https://prod.example\n"},
	} {
		var buf strings.Builder
		if err := printContexts(&buf, cfg, c.noHeaders); err != nil || buf.String() != c.want {
			t.Errorf("get-contexts (--no-headers=%v):\n%s\nwant:\n%s (%v)", c.noHeaders, buf.String(), c.want, err)
		}
	}
}

// dev adds its context without taking over the user's current one.
func TestCLIAddContextBecomesCurrentOnlyWithoutOne(t *testing.T) {
	dev := Context{Server: "http://127.0.0.1:8080", Token: "dev-token"}
	for _, c := range []struct {
		name, file, wantCurrent string
	}{
		{"no file", "", "dev"},
		{"another current context", "current-context: prod\ncontexts: {prod: {server: https://prod.example}}\n", "prod"},
		{"a dangling current context", "current-context: gone\ncontexts: {prod: {server: https://prod.example}}\n", "dev"},
		{"dev current already", "current-context: dev\ncontexts: {dev: {server: http://old}}\n", "dev"},
	} {
		path := filepath.Join(t.TempDir(), "svcbridge", "config")
		if c.file != "" {
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		current, err := AddContext(path, "dev", dev)
		cfg, lerr := LoadConfig(path)
		if err != nil || lerr != nil {
			t.Fatalf("%s: %v %v", c.name, err, lerr)
		}
		if cfg.CurrentContext != c.wantCurrent || current != (c.wantCurrent == "dev") || *cfg.Contexts["dev"] != dev {
			t.Errorf("%s: current %q (reported %v), dev %+v; want current %q", c.name, cfg.CurrentContext, current, cfg.Contexts["dev"], c.wantCurrent)
		}
	}
}

// A second `svcbridge dev` keeps the first's context dev while that
// server runs: it saves itself as dev-<port>, and says so. A dev context
// whose server no longer runs is replaced, as before.
func TestCLIDevKeepsTheContextOfAnotherRunningDev(t *testing.T) {
	first := newFleet(t) // and a configuration file of the test's own
	path := ConfigPath()
	save := func(server, token string) (name string, current bool, warned string) {
		t.Helper()
		var warn strings.Builder
		name, current, err := AddDevContext(path, Context{Server: server, Token: token}, &warn)
		if err != nil {
			t.Fatal(err)
		}
		return name, current, warn.String()
	}
	context := func(name string) Context {
		t.Helper()
		cfg, err := LoadConfig(path)
		if err != nil || cfg.Contexts[name] == nil {
			t.Fatalf("no context %s (%v)", name, err)
		}
		return *cfg.Contexts[name]
	}
	if name, current, warned := save(first.URL, "first-token"); name != "dev" || !current || warned != "" {
		t.Errorf("the first dev: saved as %s (current %v), said %q", name, current, warned)
	}
	second := closedServer(t)
	port := second[strings.LastIndex(second, ":")+1:]
	name, current, warned := save(second, "second-token")
	if name != "dev-"+port || current || warned != "The CLI context dev is "+first.URL+", another svcbridge server, which is running: it is kept, "+
		"and this server is saved as context dev-"+port+" (svcbridge --context dev-"+port+" ..., or svcbridge config use-context dev-"+port+").\n" {
		t.Errorf("a second dev: saved as %s (current %v), said %q", name, current, warned)
	}
	if dev, second := context("dev"), context(name); dev != (Context{Server: first.URL, Token: "first-token"}) || second.Token != "second-token" {
		t.Errorf("contexts dev %+v and %s %+v", dev, name, second)
	}
	// The second one again (a restart): the same context.
	if again, _, _ := save(second, "second-token-2"); again != name || context(name).Token != "second-token-2" {
		t.Errorf("the second dev restarted: saved as %s %+v", again, context(again))
	}

	// Its server down, context dev is reported by name, as is the other.
	first.srv.Close()
	code, _, stderr := runCLI("get", "services")
	host := strings.TrimPrefix(first.URL, "http://")
	if code != ExitUnreachable || !strings.HasPrefix(stderr, "error: context dev ("+first.URL+"): cannot reach its svcbridge server: dial tcp "+host+": connect: connection refused (") {
		t.Errorf("get services with the current context's server down: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCLI("status", "--context", name)
	if code != ExitUnreachable || !strings.HasPrefix(stderr, "error: context "+name+" ("+second+"): cannot reach its svcbridge server: ") {
		t.Errorf("status --context %s with its server down: exit %d\n%s", name, code, stderr)
	}
	// --server names no context.
	code, _, stderr = runCLI("get", "services", "--server", first.URL)
	if code != ExitUnreachable || !strings.HasPrefix(stderr, "error: cannot reach the svcbridge server at "+first.URL+": ") {
		t.Errorf("get services --server, down: exit %d\n%s", code, stderr)
	}

	// A third dev, the first no longer running: dev is its.
	third := closedServer(t)
	if name, current, warned := save(third, "third-token"); name != "dev" || !current || warned != "" || context("dev").Server != third {
		t.Errorf("a dev after the first stopped: saved as %s (current %v), said %q, dev %+v", name, current, warned, context("dev"))
	}
}

// closedServer is the URL of a port nothing listens on any more.
func closedServer(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}
