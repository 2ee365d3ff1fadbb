package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"svcbridge/bench"
)

func TestCheckBench(t *testing.T) {
	flags := bench.Config{Scenario: "all", N: 100, Clients: 10, Agents: 10, Steps: 4, Samples: 20, Reads: 5, Poll: 5 * time.Millisecond}
	for _, c := range []struct {
		name       string
		set        func(*bench.Config)
		clientsSet bool
		wantErr    string
		check      func(bench.Config) bool
	}{
		{name: "defaults", set: func(*bench.Config) {}, check: func(c bench.Config) bool { return c == flags }},
		{name: "scale runs 50 clients", set: func(c *bench.Config) { c.Scenario = "scale" }, check: func(c bench.Config) bool { return c.Clients == 50 }},
		{name: "scale with --clients", set: func(c *bench.Config) { c.Scenario, c.Clients = "scale", 3 }, clientsSet: true,
			check: func(c bench.Config) bool { return c.Clients == 3 }},
		{name: "polls keeps --clients' default", set: func(c *bench.Config) { c.Scenario = "polls" }, check: func(c bench.Config) bool { return c.Clients == 10 }},
		{name: "no poll interval", set: func(c *bench.Config) { c.Poll = 0 }, check: func(c bench.Config) bool { return c.Poll == 5*time.Millisecond }},
		{name: "unknown scenario", set: func(c *bench.Config) { c.Scenario = "soak" }, wantErr: `invalid --scenario "soak": want all or one of create-latency, concurrent-creates, fanout, tag-edits, scale, polls`},
		{name: "no agents", set: func(c *bench.Config) { c.Agents = 0 }, wantErr: "--n, --clients and --agents must be at least 1"},
		{name: "no steps", set: func(c *bench.Config) { c.Steps = 0 }, wantErr: "--steps and --reads must be at least 1, --samples at least 0"},
		{name: "negative samples", set: func(c *bench.Config) { c.Samples = -1 }, wantErr: "--steps and --reads must be at least 1, --samples at least 0"},
	} {
		cfg := flags
		c.set(&cfg)
		got, err := checkBench(cfg, c.clientsSet)
		switch {
		case c.wantErr != "":
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: %v, want %s", c.name, err, c.wantErr)
			}
		case err != nil || !c.check(got):
			t.Errorf("%s: %+v, %v", c.name, got, err)
		}
	}
}

// The command checks its flags, and a request bench could not make ends
// with the CLI's exit codes.
func TestCLIBenchExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		w.Write([]byte(`{"name":"AuthError","message":"Invalid token"}`))
	}))
	defer srv.Close()
	// The exit code: o.Exit's for 2 and up, else ExitCode's of the error.
	run := func(args ...string) (code int, stderr string) {
		var e strings.Builder
		cmd := benchCmd(Options{Exit: func(c int) { code = c }})
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(&e)
		cmd.SilenceUsage = true
		if err := cmd.Execute(); code == 0 {
			code = ExitCode(err)
			fmt.Fprint(&e, err)
		}
		return code, e.String()
	}
	if code, stderr := run("--server", "http://127.0.0.1:1", "--scenario", "scale", "--steps", "0"); code != ExitOther || !strings.Contains(stderr, "--steps") {
		t.Errorf("--steps 0: exit %d %s", code, stderr)
	}
	if code, stderr := run("--server", "http://127.0.0.1:1", "--n", "1"); code != ExitUnreachable || !strings.Contains(stderr, "cannot reach the svcbridge server at http://127.0.0.1:1") {
		t.Errorf("a closed port: exit %d %s", code, stderr)
	}
	if code, stderr := run("--server", srv.URL, "--n", "1"); code != ExitRejected || !strings.Contains(stderr, "Invalid token (401 AuthError)") {
		t.Errorf("a refused token: exit %d %s", code, stderr)
	}
}
