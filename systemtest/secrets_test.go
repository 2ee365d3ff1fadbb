package systemtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"svcbridge/pgtest"
	"svcbridge/porttest"
	"svcbridge/proctest"
)

// Secrets planted in the environment of every run below; none may appear
// in what the binary prints.
const (
	plantedPassword = "S3cret"
	plantedAPIKey   = "planted-temporal-api-key"
	plantedToken    = "planted-svcbridge-token"
	plantedClient   = "planted-oidc-client-secret"
)

var plantedSecrets = []string{
	"DATABASE_URL=postgres://u:" + plantedPassword + "@h/db",
	"TEMPORAL_API_KEY=" + plantedAPIKey,
	"SVCBRIDGE_TOKEN=" + plantedToken,
	"OIDC_CLIENT_SECRET=" + plantedClient,
}

// runBinary runs the real binary to its end (at most a minute) with the
// planted secrets and env, and returns what it printed.
func runBinary(t *testing.T, env []string, args ...string) string {
	t.Helper()
	bin := proctest.Svcbridge(t) // built first: its build is not the run's minute
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), plantedSecrets...), env...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func assertNoSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, secret := range []string{plantedPassword, plantedAPIKey, plantedToken, plantedClient} {
		if strings.Contains(out, secret) {
			t.Errorf("%s prints the secret %q:\n%s", what, secret, out)
		}
	}
}

// TestHelpShowsNoSecret: --help of every role and CLI verb shows the
// static defaults, not the environment.
func TestHelpShowsNoSecret(t *testing.T) {
	for _, cmd := range []string{"dev", "api", "worker", "migrate", "apply", "get", "describe", "delete", "reconcile", "status", "bench", "login", "version", "diff", "preview", "import"} {
		args := strings.Fields(cmd + " --help")
		out := runBinary(t, nil, args...)
		if !strings.Contains(out, "Usage:") {
			t.Errorf("svcbridge %s --help printed no usage:\n%s", cmd, out)
		}
		assertNoSecret(t, "svcbridge "+cmd+" --help", out)
	}
}

// TestStartupErrorsShowNoSecret: a malformed DATABASE_URL, a database
// that does not answer and a Temporal that does not answer stop every
// role with an error naming the problem, without the password or key.
func TestStartupErrorsShowNoSecret(t *testing.T) {
	tokens := "AUTH_TOKENS_FILE=" + tokensFile(t)
	dataDir := "DATA_DIR=" + t.TempDir()
	malformed := "DATABASE_URL=postgres://u:" + plantedPassword + "@h:notaport/db"
	closedPort := porttest.Free(t)
	unreachable := fmt.Sprintf("DATABASE_URL=postgres://u:%s@127.0.0.1:%d/db?sslmode=disable&connect_timeout=5", plantedPassword, closedPort)
	// A real database (trust authentication ignores the password) and a
	// Temporal that does not answer: the API key is in play.
	realDB := strings.Replace(pgtest.NewDB(t), "://postgres@", "://postgres:"+plantedPassword+"@", 1)
	noTemporal := []string{"DATABASE_URL=" + realDB, fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", closedPort)}

	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"dev, malformed URL", []string{malformed, dataDir}, []string{"dev"}, "DATABASE_URL"},
		{"api, malformed URL", []string{malformed, tokens}, []string{"api"}, "DATABASE_URL"},
		{"worker, malformed URL", []string{malformed}, []string{"worker"}, "DATABASE_URL"},
		{"migrate, malformed URL", []string{malformed}, []string{"migrate"}, "DATABASE_URL"},
		{"api, database down", []string{unreachable, tokens}, []string{"api"}, "connect"},
		{"worker, database down", []string{unreachable}, []string{"worker"}, "connect"},
		{"migrate, database down", []string{unreachable}, []string{"migrate"}, "connect"},
		{"api, Temporal down", append(noTemporal, tokens), []string{"api"}, "TEMPORAL_ADDRESS"},
		{"worker, Temporal down", noTemporal, []string{"worker"}, "TEMPORAL_ADDRESS"},
	}
	for _, c := range cases {
		out := runBinary(t, c.env, c.args...)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: output does not mention %s:\n%s", c.name, c.want, out)
		}
		assertNoSecret(t, c.name, out)
	}
}

// TestDatabasePasswordWithDelimitersIsNotPrinted: a DATABASE_URL whose
// password holds '/', '?' or '#' unencoded stops every role that reads it
// with an error naming the setting and no part of the password, whether
// the parser fails on it or reads its start as a port.
func TestDatabasePasswordWithDelimitersIsNotPrinted(t *testing.T) {
	tokens := "AUTH_TOKENS_FILE=" + tokensFile(t)
	closedPort := porttest.Free(t)
	for _, sep := range []string{"/", "?", "#"} {
		for _, pw := range []string{"Zq9x" + sep + "Wv8y", "7719" + sep + "Wv8y"} {
			env := []string{fmt.Sprintf("DATABASE_URL=postgres://u:%s@127.0.0.1:%d/db?sslmode=disable&connect_timeout=5", pw, closedPort), tokens}
			for _, role := range []string{"api", "worker", "migrate"} {
				out := runBinary(t, env, role)
				if !strings.Contains(out, "DATABASE_URL") {
					t.Errorf("%s with password %q: output does not name DATABASE_URL:\n%s", role, pw, out)
				}
				for _, part := range []string{"Zq9x", "7719", "Wv8y"} {
					if strings.Contains(out, part) {
						t.Errorf("%s with password %q prints %q:\n%s", role, pw, part, out)
					}
				}
			}
		}
	}
}

// TestHelpIsTheClientsAtTheTop: `svcbridge --help` is a client's help (the
// verbs, no server setting); each role's help lists its settings in groups,
// dev's own first, and api's has none of dev's.
func TestHelpIsTheClientsAtTheTop(t *testing.T) {
	root := runBinary(t, nil, "--help")
	for _, want := range []string{"Client commands", "apply", "status", "Run svcbridge", "worker"} {
		if !strings.Contains(root, want) {
			t.Errorf("svcbridge --help lacks %q:\n%s", want, root)
		}
	}
	for _, server := range []string{"--database-url", "--temporal-address", "--data-dir"} {
		if strings.Contains(root, server) {
			t.Errorf("svcbridge --help lists the server setting %s:\n%s", server, root)
		}
	}
	dev := runBinary(t, nil, "dev", "--help")
	first := strings.Index(dev, "Embedded (dev):")
	if first < 0 || first > strings.Index(dev, "Database:") || first > strings.Index(dev, "--listen") {
		t.Errorf("dev --help does not list its own ports first, grouped:\n%s", dev)
	}
	api := runBinary(t, nil, "api", "--help")
	if strings.Contains(api, "--data-dir") || strings.Contains(api, "--ui-port") || !strings.Contains(api, "Temporal:") {
		t.Errorf("api --help is not api's settings, grouped:\n%s", api)
	}
	status := runBinary(t, nil, "status", "--help")
	if strings.Contains(status, "--database-url") || !strings.Contains(status, "--server") {
		t.Errorf("status --help is not a client's:\n%s", status)
	}
}
