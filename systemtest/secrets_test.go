package systemtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Secrets planted in the environment of every run below; none may appear
// in what the binary prints.
const (
	plantedPassword = "S3cret"
	plantedAPIKey   = "planted-temporal-api-key"
	plantedToken    = "planted-svcbridge-token"
)

var plantedSecrets = []string{
	"DATABASE_URL=postgres://u:" + plantedPassword + "@h/db",
	"TEMPORAL_API_KEY=" + plantedAPIKey,
	"SVCBRIDGE_TOKEN=" + plantedToken,
}

// runBinary runs the real binary to its end (at most a minute) with the
// planted secrets and env, and returns what it printed.
func runBinary(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(append(os.Environ(), plantedSecrets...), env...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func assertNoSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, secret := range []string{plantedPassword, plantedAPIKey, plantedToken} {
		if strings.Contains(out, secret) {
			t.Errorf("%s prints the secret %q:\n%s", what, secret, out)
		}
	}
}

// TestHelpShowsNoSecret: --help of every role and CLI verb shows the
// static defaults, not the environment.
func TestHelpShowsNoSecret(t *testing.T) {
	for _, cmd := range []string{"dev", "api", "worker", "migrate", "apply", "get", "describe", "delete", "reconcile", "status", "bench"} {
		args := strings.Fields(cmd + " --help")
		out := runBinary(t, nil, args...)
		if !strings.Contains(out, "Usage:") {
			t.Errorf("svcbridge %s --help printed no usage:\n%s", cmd, out)
		}
		assertNoSecret(t, "svcbridge "+cmd+" --help", out)
	}
}
