// Package config reads svcbridge's settings: each has an environment
// variable and a flag (the flag wins), a default, and a check that names the
// setting when its value is wrong.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"svcbridge/api"
	"svcbridge/importer"
	"svcbridge/kube"
	"svcbridge/service"
	"svcbridge/store"
)

// Config is every setting of every role; a role reads the ones it needs.
type Config struct {
	Listen            string
	DataDir           string
	TemporalPort      int
	UIPort            int
	ControlPlane      service.ControlPlane
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	TemporalUIURL     string
	TaskQueue         string
	WorkflowIDPrefix  string
	TemporalTLS       TemporalTLS
	BridgePorts       store.PortRange
	BridgePortsRaw    string
	TagPrefix         string
	ResyncInterval    time.Duration
	MetricsListen     string
	DebugListen       string
	AuthTokensFile    string
	OIDCIssuer        string
	OIDCAudience      string
	OIDCRoleClaim     string
	OIDCClientID      string
	OIDCClientSecret  string
	Kube              kube.Config
	DriftInterval     time.Duration
	LogLevel          string
	LogFormat         string
	HTTP              HTTPServer
	Pool              store.Pool
	Limits            api.Limits
	TrustedProxies    []string
}

// HTTPServer bounds what one client may hold of the api's (and the worker's
// metrics) HTTP server.
type HTTPServer struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
}

// TemporalTLS is how the api and worker reach a secured Temporal.
type TemporalTLS struct {
	Enabled                   bool
	Cert, Key, CA, ServerName string
	APIKey                    string
}

// Setting documents one setting; Settings is the README's table.
type Setting struct {
	Flag, Env, Default, Help string
}

// Settings lists every setting, in README order.
var Settings = []Setting{
	{"listen", "LISTEN", "127.0.0.1:8080", "address of the REST API"},
	{"http-read-header-timeout", "HTTP_READ_HEADER_TIMEOUT", "10s", "api, dev, worker's METRICS_LISTEN: time a client has to send a request's headers"},
	{"http-read-timeout", "HTTP_READ_TIMEOUT", "30s", "api, dev, worker's METRICS_LISTEN: time a client has to send a whole request, body included (a document's body is at most 64 KiB)"},
	{"http-write-timeout", "HTTP_WRITE_TIMEOUT", "60s", "api, dev, worker's METRICS_LISTEN: time from the end of a request's headers to the end of its answer (0: none)"},
	{"http-idle-timeout", "HTTP_IDLE_TIMEOUT", "120s", "api, dev, worker's METRICS_LISTEN: how long a keep-alive connection may wait for its next request"},
	{"http-max-header-bytes", "HTTP_MAX_HEADER_BYTES", "65536", "api, dev, worker's METRICS_LISTEN: largest request header block, in bytes (431 above it)"},
	{"data-dir", "DATA_DIR", "./.svcbridge", "dev: where the embedded store and Temporal keep their files"},
	{"temporal-port", "TEMPORAL_PORT", "7233", "dev: port of the embedded Temporal frontend (gRPC)"},
	{"ui-port", "UI_PORT", "8233", "dev: port of the embedded Temporal Web UI"},
	{"control-plane", "CONTROL_PLANE", "remote", "remote or kubernetes"},
	{"controller-namespace", "CONTROLLER_NAMESPACE", "", "kubernetes: namespace of the hub ConfigMap iofog-router and of the Kubernetes Services (required there)"},
	{"controller-name", "CONTROLLER_NAME", "", "kubernetes: app.kubernetes.io/instance label of the Services svcbridge owns (default pot, or iofog for the iofog distribution)"},
	{"app-label", "APP_LABEL", "iofog", "kubernetes: app.kubernetes.io/name label of the Services"},
	{"distribution", "DISTRIBUTION", "datasance", "kubernetes: datasance (router label datasance.com/component) or iofog (iofog.org/component)"},
	{"component-label-domain", "COMPONENT_LABEL_DOMAIN", "", "kubernetes: domain of the router component label and selector, overriding the distribution's"},
	{"lb-poll-attempts", "LB_POLL_ATTEMPTS", "10", "kubernetes: checks of a LoadBalancer's ingress per reconcile"},
	{"lb-poll-interval", "LB_POLL_INTERVAL", "2s", "kubernetes: time between those checks (a Go duration)"},
	{"database-url", "DATABASE_URL", "", "PostgreSQL URL (postgres://...); required by api and worker; dev uses the embedded store when empty"},
	{"db-max-open-conns", "DB_MAX_OPEN_CONNS", "10", "PostgreSQL: most connections one process opens"},
	{"db-max-idle-conns", "DB_MAX_IDLE_CONNS", "10", "PostgreSQL: most idle connections one process keeps (at most DB_MAX_OPEN_CONNS)"},
	{"db-conn-max-lifetime", "DB_CONN_MAX_LIFETIME", "30m", "PostgreSQL: age at which a connection is closed and replaced (a Go duration; 0: never)"},
	{"temporal-address", "TEMPORAL_ADDRESS", "127.0.0.1:7233", "api, worker: Temporal frontend host:port"},
	{"temporal-namespace", "TEMPORAL_NAMESPACE", "default", "Temporal namespace"},
	{"temporal-ui-url", "TEMPORAL_UI_URL", "", "api: base URL of the Temporal Web UI, for the workflowUrl each service answers (dev: its own UI; empty: no link)"},
	{"temporal-tls-cert", "TEMPORAL_TLS_CERT", "", "api, worker: client certificate (PEM file) for mTLS to Temporal"},
	{"temporal-tls-key", "TEMPORAL_TLS_KEY", "", "api, worker: its private key (PEM file)"},
	{"temporal-tls-ca", "TEMPORAL_TLS_CA", "", "api, worker: CA bundle (PEM file) that signed Temporal's server certificate; default the system roots"},
	{"temporal-tls-server-name", "TEMPORAL_TLS_SERVER_NAME", "", "api, worker: server name to verify, when it differs from TEMPORAL_ADDRESS's host"},
	{"temporal-tls", "TEMPORAL_TLS", "false", "api, worker: use TLS to Temporal without a client certificate (true with an API key or TLS settings)"},
	{"temporal-api-key", "TEMPORAL_API_KEY", "", "api, worker: API key for Temporal Cloud or a cluster that takes them (implies TLS)"},
	{"task-queue", "TASK_QUEUE", "svcbridge", "Temporal task queue of the workflows"},
	{"workflow-id-prefix", "WORKFLOW_ID_PREFIX", "svcbridge/", "start of every workflow and schedule ID; installations sharing a namespace need their own (and their own TASK_QUEUE)"},
	{"bridge-ports-range", "BRIDGE_PORTS_RANGE", "10024-65535", "inclusive range bridgePorts are taken from, first free first"},
	{"service-annotation-tag", "SERVICE_ANNOTATION_TAG", "service.iofog.org/tag", "prefix of agent tags that select services"},
	{"resync-interval", "RESYNC_INTERVAL", "30s", "worker: how often unsettled services are picked up again (a Go duration)"},
	{"auth-tokens-file", "AUTH_TOKENS_FILE", "", "file of static API tokens with roles (tokens: [{name, role, token | sha256}])"},
	{"oidc-issuer", "OIDC_ISSUER", "", "OpenID Connect issuer URL whose access tokens the API accepts (e.g. a Keycloak realm)"},
	{"oidc-audience", "OIDC_AUDIENCE", "", "audience (client ID) those tokens must carry; required with OIDC_ISSUER"},
	{"oidc-role-claim", "OIDC_ROLE_CLAIM", "realm_access.roles", "dotted path of the token claim holding the role (admin, sre, developer, viewer)"},
	{"oidc-client-id", "OIDC_CLIENT_ID", "", "api: client svcbridge uses at the issuer's token endpoint for potctl's login and refresh (default: OIDC_AUDIENCE)"},
	{"oidc-client-secret", "OIDC_CLIENT_SECRET", "", "api: that client's secret (empty for a public client)"},
	{"drift-interval", "DRIFT_INTERVAL", "10m", "worker: how often every router config is checked and repaired (a Go duration; 0 turns the check off)"},
	{"metrics-listen", "METRICS_LISTEN", "", "worker: address of a /metrics and /healthz listener (empty: none; api and dev serve /metrics on LISTEN)"},
	{"debug-listen", "DEBUG_LISTEN", "", "api, dev, worker: loopback address of a listener serving Go's profiles at /debug/pprof/ (empty: none)"},
	{"watch-max", "WATCH_MAX", "256", "api, dev: most watches (?watch=true) open at once in one process (429 above it)"},
	{"watch-max-per-client", "WATCH_MAX_PER_CLIENT", "16", "api, dev: most watches open at once for one user (429 above it)"},
	{"watch-buffer", "WATCH_BUFFER", "30", "api, dev: how many reads (one a second) of changes a watcher may fall behind before its watch ends with an ERROR event"},
	{"auth-failures-per-minute", "AUTH_FAILURES_PER_MINUTE", "10", "api, dev: failed authentications one client address, and one credential, may make per minute, beyond the burst (a failure answers 429 above it; a valid token always passes)"},
	{"auth-failure-burst", "AUTH_FAILURE_BURST", "20", "api, dev: failed authentications one client address, and one credential, may make at once"},
	{"trusted-proxies", "TRUSTED_PROXIES", "", "api, dev: addresses or CIDRs of the proxies in front of the API (an Ingress's), comma-separated: a request through one is counted, for the failed-authentication limits, against the client address it forwards (X-Forwarded-For); empty: the TCP peer's address"},
	{"log-level", "LOG_LEVEL", "info", "debug, info, warn or error"},
	{"log-format", "LOG_FORMAT", "text", "text or json"},
}

// Value is a setting's value: its flag when given, else its environment
// variable when set, else its default.
func Value(fs *pflag.FlagSet, s Setting) string {
	if f := fs.Lookup(s.Flag); f != nil && f.Changed {
		return f.Value.String()
	}
	if v, ok := os.LookupEnv(s.Env); ok {
		return v
	}
	return s.Default
}

// Load reads and checks the settings from fs (see Flags) and the
// environment.
func Load(fs *pflag.FlagSet) (Config, error) {
	values := make(map[string]string, len(Settings))
	for _, s := range Settings {
		values[s.Flag] = strings.TrimSpace(Value(fs, s))
	}
	get := func(flag string) string { return values[flag] }
	var c Config
	var err error
	bad := func(flag, _, why string) error { return invalid(flag, why) }
	c.Listen = get("listen")
	c.DataDir = get("data-dir")
	if c.TemporalPort, err = port(get("temporal-port")); err != nil {
		return c, bad("temporal-port", "TEMPORAL_PORT", err.Error())
	}
	if c.UIPort, err = port(get("ui-port")); err != nil {
		return c, bad("ui-port", "UI_PORT", err.Error())
	}
	c.ControlPlane = service.ControlPlane(strings.ToLower(get("control-plane")))
	if c.ControlPlane != service.ControlPlaneRemote && c.ControlPlane != service.ControlPlaneKubernetes {
		return c, bad("control-plane", "CONTROL_PLANE", fmt.Sprintf("%q is neither remote nor kubernetes", c.ControlPlane))
	}
	c.Kube = kube.Config{Namespace: get("controller-namespace"), ControllerName: get("controller-name"),
		AppLabel: get("app-label"), Distribution: get("distribution"), ComponentLabelDomain: get("component-label-domain")}
	if c.Kube.LBPollAttempts, err = strconv.Atoi(get("lb-poll-attempts")); err != nil || c.Kube.LBPollAttempts < 1 {
		return c, bad("lb-poll-attempts", "LB_POLL_ATTEMPTS", "must be a positive number")
	}
	if c.Kube.LBPollInterval, err = time.ParseDuration(get("lb-poll-interval")); err != nil || c.Kube.LBPollInterval <= 0 {
		return c, bad("lb-poll-interval", "LB_POLL_INTERVAL", "must be a positive Go duration such as 2s")
	}
	if c.ControlPlane.Kubernetes() {
		if c.Kube.Namespace == "" {
			return c, bad("controller-namespace", "CONTROLLER_NAMESPACE", "required when CONTROL_PLANE is kubernetes")
		}
		if err := c.Kube.Validate(); err != nil {
			return c, bad("distribution", "DISTRIBUTION", err.Error())
		}
	}
	c.DatabaseURL = get("database-url")
	if problem := DatabaseURLProblem(c.DatabaseURL); problem != "" {
		return c, bad("database-url", "DATABASE_URL", problem)
	}
	if c.Pool, err = loadPool(get); err != nil {
		return c, err
	}
	if c.HTTP, err = loadHTTP(get); err != nil {
		return c, err
	}
	if c.Limits, err = loadLimits(get); err != nil {
		return c, err
	}
	if c.TrustedProxies, err = loadProxies(get("trusted-proxies")); err != nil {
		return c, err
	}
	c.TemporalAddress = get("temporal-address")
	c.TemporalNamespace = get("temporal-namespace")
	c.TemporalUIURL = strings.TrimRight(get("temporal-ui-url"), "/")
	if u, err := url.Parse(c.TemporalUIURL); c.TemporalUIURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return c, bad("temporal-ui-url", "TEMPORAL_UI_URL", "must be an http:// or https:// URL")
	}
	c.TemporalTLS = TemporalTLS{Cert: get("temporal-tls-cert"), Key: get("temporal-tls-key"), CA: get("temporal-tls-ca"),
		ServerName: get("temporal-tls-server-name"), APIKey: get("temporal-api-key")}
	if c.TemporalTLS.Enabled, err = strconv.ParseBool(get("temporal-tls")); err != nil {
		return c, bad("temporal-tls", "TEMPORAL_TLS", "must be true or false")
	}
	if (c.TemporalTLS.Cert == "") != (c.TemporalTLS.Key == "") {
		return c, bad("temporal-tls-cert", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together")
	}
	c.TaskQueue = get("task-queue")
	c.WorkflowIDPrefix = get("workflow-id-prefix")
	if c.TaskQueue == "" {
		return c, bad("task-queue", "TASK_QUEUE", "must not be empty")
	}
	c.BridgePortsRaw = get("bridge-ports-range")
	if c.BridgePorts, err = ParsePortRange(c.BridgePortsRaw); err != nil {
		return c, bad("bridge-ports-range", "BRIDGE_PORTS_RANGE", err.Error())
	}
	c.TagPrefix = get("service-annotation-tag")
	if c.TagPrefix == "" || strings.ContainsAny(c.TagPrefix, ": ") {
		return c, bad("service-annotation-tag", "SERVICE_ANNOTATION_TAG", "must be non-empty, without ':' or spaces")
	}
	if c.ResyncInterval, err = time.ParseDuration(get("resync-interval")); err != nil || c.ResyncInterval <= 0 {
		return c, bad("resync-interval", "RESYNC_INTERVAL", "must be a positive Go duration such as 30s")
	}
	if c.DriftInterval, err = time.ParseDuration(get("drift-interval")); err != nil || c.DriftInterval < 0 {
		return c, bad("drift-interval", "DRIFT_INTERVAL", "must be a Go duration such as 10m, or 0 to turn the check off")
	}
	c.MetricsListen = get("metrics-listen")
	if c.DebugListen = get("debug-listen"); c.DebugListen != "" {
		if why := LoopbackProblem(c.DebugListen); why != "" {
			return c, bad("debug-listen", "DEBUG_LISTEN", why)
		}
	}
	c.AuthTokensFile, c.OIDCIssuer, c.OIDCAudience, c.OIDCRoleClaim =
		get("auth-tokens-file"), get("oidc-issuer"), get("oidc-audience"), get("oidc-role-claim")
	if c.OIDCIssuer != "" && c.OIDCAudience == "" {
		return c, bad("oidc-audience", "OIDC_AUDIENCE", "required with OIDC_ISSUER, so tokens issued to other clients are refused")
	}
	c.OIDCClientID, c.OIDCClientSecret = get("oidc-client-id"), get("oidc-client-secret")
	if c.OIDCClientID == "" {
		c.OIDCClientID = c.OIDCAudience
	}
	c.LogLevel, c.LogFormat = strings.ToLower(get("log-level")), strings.ToLower(get("log-format"))
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, bad("log-level", "LOG_LEVEL", "must be debug, info, warn or error")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return c, bad("log-format", "LOG_FORMAT", "must be text or json")
	}
	return c, nil
}

// DatabaseURLProblem says what is wrong with a DATABASE_URL, "" when
// nothing is. It never quotes the URL nor the parser's error, which repeats
// parts of it: a password holding '/', '?' or '#' makes the parser read its
// start as the host's port (`invalid port ":S3cr"`), or as a valid host and
// port followed by a path, query or fragment holding the '@'.
func DatabaseURLProblem(raw string) string {
	const encode = "percent-encode '/', '?', '#', '@' and ':' in its user name and password (%2F %3F %23 %40 %3A)"
	switch u, err := url.Parse(raw); {
	case raw == "":
		return ""
	case !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://"):
		return "must be a postgres:// or postgresql:// URL"
	case err != nil:
		return "not a valid URL: " + encode
	case u.User == nil && strings.Contains(raw, "@"):
		return "an '@' outside the user info: " + encode
	}
	return ""
}

// Redact returns err with the value of every secret setting (DATABASE_URL
// and its password, TEMPORAL_API_KEY, OIDC_CLIENT_SECRET) replaced, for an
// error that may quote one to be printed; nil stays nil.
func (c Config) Redact(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for _, s := range []string{c.DatabaseURL, c.TemporalTLS.APIKey, c.OIDCClientSecret} {
		if s != "" {
			text = strings.ReplaceAll(text, s, "xxxxx")
		}
	}
	if text = store.RedactPassword(c.DatabaseURL, text); text == err.Error() {
		return err
	}
	return errors.New(text)
}

// loadPool reads the DB_* settings.
func loadPool(get func(string) string) (store.Pool, error) {
	var p store.Pool
	var err error
	if p.MaxOpen, err = strconv.Atoi(get("db-max-open-conns")); err != nil || p.MaxOpen < 1 {
		return p, invalid("db-max-open-conns", "must be a positive number")
	}
	if p.MaxIdle, err = strconv.Atoi(get("db-max-idle-conns")); err != nil || p.MaxIdle < 0 || p.MaxIdle > p.MaxOpen {
		return p, invalid("db-max-idle-conns", "must be a number from 0 to DB_MAX_OPEN_CONNS")
	}
	if p.MaxLifetime, err = time.ParseDuration(get("db-conn-max-lifetime")); err != nil || p.MaxLifetime < 0 {
		return p, invalid("db-conn-max-lifetime", "must be a Go duration such as 30m, or 0 for no limit")
	}
	return p, nil
}

// loadHTTP reads the HTTP_* settings. Only the write timeout may be 0: the
// others are what protects the server from clients that send slowly.
func loadHTTP(get func(string) string) (HTTPServer, error) {
	var h HTTPServer
	for _, d := range []struct {
		flag     string
		to       *time.Duration
		zeroIsOK bool
	}{
		{"http-read-header-timeout", &h.ReadHeaderTimeout, false},
		{"http-read-timeout", &h.ReadTimeout, false},
		{"http-write-timeout", &h.WriteTimeout, true},
		{"http-idle-timeout", &h.IdleTimeout, false},
	} {
		v, err := time.ParseDuration(get(d.flag))
		if err != nil || v < 0 || (v == 0 && !d.zeroIsOK) {
			return h, invalid(d.flag, "must be a positive Go duration such as 30s")
		}
		*d.to = v
	}
	var err error
	if h.MaxHeaderBytes, err = strconv.Atoi(get("http-max-header-bytes")); err != nil || h.MaxHeaderBytes < 1024 {
		return h, invalid("http-max-header-bytes", "must be a number of bytes, at least 1024")
	}
	return h, nil
}

// loadLimits reads the WATCH_* and AUTH_FAILURE* settings.
func loadLimits(get func(string) string) (api.Limits, error) {
	var l api.Limits
	for _, n := range []struct {
		flag string
		to   *int
	}{
		{"watch-max", &l.WatchMax}, {"watch-max-per-client", &l.WatchMaxPerClient},
		{"watch-buffer", &l.WatchBuffer}, {"auth-failure-burst", &l.AuthFailureBurst},
	} {
		v, err := strconv.Atoi(get(n.flag))
		if err != nil || v < 1 {
			return l, invalid(n.flag, "must be a positive number")
		}
		*n.to = v
	}
	v, err := strconv.ParseFloat(get("auth-failures-per-minute"), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return l, invalid("auth-failures-per-minute", "must be a positive number")
	}
	l.AuthFailuresPerMinute = v
	return l, nil
}

// loadProxies reads TRUSTED_PROXIES: addresses and CIDRs.
func loadProxies(v string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				return nil, invalid("trusted-proxies", fmt.Sprintf("%q is not an IP address or a CIDR", p))
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// invalid is the error of a setting whose value is wrong, naming its
// variable and flag.
func invalid(flag, why string) error {
	for _, s := range Settings {
		if s.Flag == flag {
			return fmt.Errorf("invalid setting %s (--%s): %s", s.Env, flag, why)
		}
	}
	panic("config: no setting --" + flag)
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	return p, nil
}

// ParsePortRange reads "first-last", both inclusive, 1 <= first <= last <= 65535.
func ParsePortRange(s string) (store.PortRange, error) {
	r, err := importer.ParsePorts(s)
	return store.PortRange{First: r.First, Last: r.Last}, err
}

// LoopbackProblem says why addr (host:port) is not an address on
// loopback only, "" when it is. Go's profiles show what a process holds,
// tokens and keys included, so they are served to the host (or pod)
// alone: ssh -L or kubectl port-forward reaches them.
func LoopbackProblem(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "must be host:port, such as 127.0.0.1:6060"
	}
	if ip, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return "must be a loopback address, such as 127.0.0.1:6060 (profiles show the process's memory, secrets included); reach it with ssh -L or kubectl port-forward"
	}
	return ""
}
