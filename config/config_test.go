package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"svcbridge/api"
	"svcbridge/store"
)

func load(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	for _, s := range Settings {
		t.Setenv(s.Env, s.Default) // the machine's environment must not leak in
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RoleFlags(fs, "dev")
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
		"DB_MAX_OPEN_CONNS":      {"--db-max-open-conns", "0"},
		"DB_MAX_IDLE_CONNS":      {"--db-max-open-conns", "4", "--db-max-idle-conns", "5"},
		"DB_CONN_MAX_LIFETIME":   {"--db-conn-max-lifetime", "-1m"},
		"HTTP_READ_TIMEOUT":      {"--http-read-timeout", "0"},
		"HTTP_WRITE_TIMEOUT":     {"--http-write-timeout", "soon"},
		"HTTP_MAX_HEADER_BYTES":  {"--http-max-header-bytes", "100"},
		"DEBUG_LISTEN":           {"--debug-listen", "0.0.0.0:6060"},
		"TRUSTED_PROXIES":        {"--trusted-proxies", "10.0.0.0/8, ingress"},
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

// TestEnvironmentIsReadAtLoadNotInHelp: a flag's default (what --help
// prints) is the table's even when the environment holds a secret; Load
// takes the flag, else the environment, else the default.
func TestEnvironmentIsReadAtLoadNotInHelp(t *testing.T) {
	for _, s := range Settings {
		t.Setenv(s.Env, s.Default)
	}
	t.Setenv("DATABASE_URL", "postgres://u:S3cret@h/db")
	t.Setenv("TEMPORAL_API_KEY", "secret-key")
	t.Setenv("TASK_QUEUE", "from-env")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RoleFlags(fs, "dev")
	if usage := fs.FlagUsages(); strings.Contains(usage, "S3cret") || strings.Contains(usage, "secret-key") {
		t.Errorf("usage shows the environment's secrets:\n%s", usage)
	}
	if err := fs.Parse([]string{"--temporal-namespace", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "postgres://u:S3cret@h/db" || c.TaskQueue != "from-env" || c.TemporalNamespace != "from-flag" || c.TemporalAddress != "127.0.0.1:7233" {
		t.Errorf("loaded %+v", c)
	}
	t.Setenv("TEMPORAL_NAMESPACE", "from-env")
	if c, _ := Load(fs); c.TemporalNamespace != "from-flag" {
		t.Errorf("the environment won over the flag: %q", c.TemporalNamespace)
	}
}

// TestMalformedDatabaseURLIsRefusedWithoutItsPassword: the error names
// the setting and why, not the URL nor any part of its password, whatever
// characters the password holds unencoded.
func TestMalformedDatabaseURLIsRefusedWithoutItsPassword(t *testing.T) {
	for _, u := range []string{"postgres://u:S3cret@h:notaport/db", "postgres://u:S3cret@h/db\x7f", "postgres://u:S3cret@[::1/db",
		"postgres://u:S3cr/et@h/db", "postgres://u:S3cr?et@h/db", "postgres://u:S3cr#et@h/db",
		"postgres://u:1234/S3cret@h/db", "postgres://u:1234?S3cret@h/db", "postgres://u:1234#S3cret@h/db"} {
		_, err := load(t, "--database-url", u)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || strings.Contains(err.Error(), "S3cr") || strings.Contains(err.Error(), "1234") {
			t.Errorf("%q: error %v, want one naming DATABASE_URL without the password", u, err)
		}
	}
	for _, u := range []string{"", "postgres://u:S3cr%2Fet%3F%23%40@h:5432/db?sslmode=disable", "postgresql://u:p@ss:w@h/db", "postgres:///db?host=/tmp"} {
		if _, err := load(t, "--database-url", u); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// Redact hides every secret setting's value, and the database password
// raw or decoded, in an error that quotes them.
func TestRedactHidesSecretSettings(t *testing.T) {
	c, err := load(t, "--database-url", "postgres://u:S3cr%2Fet@h/db", "--temporal-api-key", "planted-key",
		"--oidc-client-secret", "planted-client-secret")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Redact(errors.New("connect postgres://u:S3cr%2Fet@h/db: password S3cr/et, S3cr%2Fet; key planted-key; client planted-client-secret")).Error()
	for _, secret := range []string{"S3cr", "planted-key", "planted-client-secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("Redact left %q: %s", secret, got)
		}
	}
	if c.Redact(nil) != nil {
		t.Error("Redact(nil) is not nil")
	}
}

func TestPoolAndHTTPServerDefaults(t *testing.T) {
	c, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pool != store.DefaultPool {
		t.Errorf("pool %+v, want store.DefaultPool %+v", c.Pool, store.DefaultPool)
	}
	want := HTTPServer{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if c.HTTP != want {
		t.Errorf("HTTP server %+v, want %+v", c.HTTP, want)
	}
	if c.Limits != api.DefaultLimits {
		t.Errorf("limits %+v, want api.DefaultLimits %+v", c.Limits, api.DefaultLimits)
	}
	if c, err := load(t, "--http-write-timeout", "0"); err != nil || c.HTTP.WriteTimeout != 0 {
		t.Errorf("HTTP_WRITE_TIMEOUT=0 (none): %+v, %v", c.HTTP, err)
	}
}

// TestEverySettingHasOneGroup: --help shows each setting exactly once, and
// only dev takes dev's own.
func TestEverySettingHasOneGroup(t *testing.T) {
	seen := map[string]string{}
	for _, g := range Groups {
		for _, f := range g.Flags {
			if prev, ok := seen[f]; ok {
				t.Errorf("setting %s is in groups %q and %q", f, prev, g.Title)
			}
			seen[f] = g.Title
		}
	}
	for _, s := range Settings {
		if _, ok := seen[s.Flag]; !ok {
			t.Errorf("setting %s is in no group", s.Flag)
		}
		delete(seen, s.Flag)
	}
	for f := range seen {
		t.Errorf("group lists %s, which is not a setting", f)
	}
	for _, c := range []struct {
		role    string
		dataDir bool
	}{{"dev", true}, {"api", false}, {"worker", false}, {"migrate", false}} {
		fs := pflag.NewFlagSet(c.role, pflag.ContinueOnError)
		RoleFlags(fs, c.role)
		if got := fs.Lookup("data-dir") != nil; got != c.dataDir {
			t.Errorf("%s takes --data-dir: %v, want %v", c.role, got, c.dataDir)
		}
		if fs.Lookup("database-url") == nil || fs.Lookup("log-level") == nil {
			t.Errorf("%s lacks a shared setting", c.role)
		}
	}
}

// TestLoopbackProblem: profiles are served on loopback only, whatever
// spelling of an address an operator gives.
func TestLoopbackProblem(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060":          true,
		"127.0.0.2:0":             true,
		"[::1]:6060":              true,
		"localhost:6060":          true,
		"0.0.0.0:6060":            false,
		":6060":                   false, // every address
		"[::]:6060":               false,
		"10.0.0.5:6060":           false,
		"example.com:6060":        false, // a name resolves to whatever DNS says
		"127.0.0.1":               false, // no port
		"[::ffff:127.0.0.1]:6060": true,
	} {
		if why := LoopbackProblem(addr); (why == "") != ok {
			t.Errorf("LoopbackProblem(%q) = %q, want loopback %v", addr, why, ok)
		}
	}
}
