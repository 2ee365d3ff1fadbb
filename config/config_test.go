package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func load(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	for _, s := range Settings {
		t.Setenv(s.Env, s.Default) // the machine's environment must not leak in
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Load(fs)
}

func TestDefaultsLoad(t *testing.T) {
	c, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.BridgePorts.First != 10024 || c.BridgePorts.Last != 65535 || c.ControlPlane != "remote" || c.TagPrefix != "service.iofog.org/tag" {
		t.Errorf("defaults: %+v", c)
	}
}

// TestInvalidSettingsNameTheSetting: start-up stops with a message that
// names the variable to fix.
func TestInvalidSettingsNameTheSetting(t *testing.T) {
	cases := map[string][]string{
		"BRIDGE_PORTS_RANGE":     {"--bridge-ports-range", "20000"},
		"CONTROL_PLANE":          {"--control-plane", "cloud"},
		"CONTROLLER_NAMESPACE":   {"--control-plane", "kubernetes"},
		"DISTRIBUTION":           {"--control-plane", "kubernetes", "--controller-namespace", "iofog", "--distribution", "acme"},
		"DATABASE_URL":           {"--database-url", "mysql://x"},
		"TEMPORAL_TLS_CERT":      {"--temporal-tls-cert", "cert.pem"},
		"TEMPORAL_TLS":           {"--temporal-tls", "maybe"},
		"OIDC_AUDIENCE":          {"--oidc-issuer", "https://issuer.example.com"},
		"RESYNC_INTERVAL":        {"--resync-interval", "-1s"},
		"DRIFT_INTERVAL":         {"--drift-interval", "often"},
		"LB_POLL_ATTEMPTS":       {"--lb-poll-attempts", "0"},
		"SERVICE_ANNOTATION_TAG": {"--service-annotation-tag", "a: b"},
		"LOG_LEVEL":              {"--log-level", "loud"},
	}
	for env, args := range cases {
		_, err := load(t, args...)
		if err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%v: error %v, want one naming %s", args, err, env)
		}
	}
}

func TestPortRanges(t *testing.T) {
	for in, ok := range map[string]bool{"10024-65535": true, " 1 - 1 ": true, "20000": false, "5-4": false, "0-10": false, "1-70000": false, "a-b": false} {
		if _, err := ParsePortRange(in); (err == nil) != ok {
			t.Errorf("%q: error %v, want ok %v", in, err, ok)
		}
	}
}
