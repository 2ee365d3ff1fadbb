package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/cli"
	"svcbridge/config"
	"svcbridge/devserver"
	"svcbridge/installation"
	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/worker"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	l := slog.New(h)
	slog.SetDefault(l)
	return l
}

func requireDatabase(cfg config.Config) error {
	if cfg.DatabaseURL == "" {
		return errors.New("invalid setting DATABASE_URL (--database-url): required by api and worker (a postgres:// URL)")
	}
	return nil
}

func runMigrate(ctx context.Context, cfg config.Config) error {
	newLogger(cfg)
	if err := requireDatabase(cfg); err != nil {
		return err
	}
	st, err := store.OpenPool(ctx, cfg.DatabaseURL, cfg.Pool)
	if err != nil {
		return err
	}
	fmt.Println("migrations applied")
	return st.Close()
}

func dialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger) (client.Client, error) {
	handler, _ := metrics.Temporal()
	opts := client.Options{
		HostPort:       cfg.TemporalAddress,
		Namespace:      cfg.TemporalNamespace,
		Logger:         worker.SDKLogger(log.With("component", "temporal-sdk"), installationOf(cfg).IDs),
		MetricsHandler: handler,
	}
	if err := temporalSecurity(cfg.TemporalTLS, &opts); err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (TEMPORAL_ADDRESS): %w", cfg.TemporalAddress, err)
	}
	return c, nil
}

// temporalSecurity sets TLS (mutual, when a client certificate is given)
// and an API key on the Temporal client options.
func temporalSecurity(t config.TemporalTLS, opts *client.Options) error {
	if !t.Enabled && t.Cert == "" && t.CA == "" && t.APIKey == "" {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return fmt.Errorf("invalid setting TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return fmt.Errorf("invalid setting TEMPORAL_TLS_CA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return errors.New("invalid setting TEMPORAL_TLS_CA: no PEM certificate in " + t.CA)
		}
	}
	opts.ConnectionOptions.TLS = tc
	if t.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
	}
	return nil
}

// parts are what the roles share once store and Temporal are connected.
type parts struct {
	cfg      config.Config
	log      *slog.Logger
	store    *store.Store
	temporal client.Client
	// unwatch removes the scrape-time gauges of store and temporal.
	unwatch func()
}

// installation is this process's installation, from its settings.
func (p parts) installation() installation.Installation { return installationOf(p.cfg) }

// installationOf is the installation cfg sets.
func installationOf(cfg config.Config) installation.Installation {
	return installation.Installation{TaskQueue: cfg.TaskQueue, IDs: workflows.IDs{Prefix: cfg.WorkflowIDPrefix},
		ControlPlane: cfg.ControlPlane, Tags: service.TagRule{Prefix: cfg.TagPrefix}, Kube: cfg.Kube}
}

func (p parts) workflowsClient() temporalclient.Client { return p.installation().Workflows(p.temporal) }

// users is how the API knows its users: who a bearer token is, and how
// ioFog clients (potctl, the Go SDK) build a session.
type users struct {
	authn    auth.Authenticator
	sessions auth.Sessions
}

// authenticator builds the API's user authentication from the settings,
// adding extra (dev's admin token) first.
func authenticator(ctx context.Context, cfg config.Config, extra ...auth.Authenticator) (users, error) {
	static := auth.Chain(extra)
	if cfg.AuthTokensFile != "" {
		s, err := auth.LoadStatic(cfg.AuthTokensFile)
		if err != nil {
			return users{}, fmt.Errorf("invalid setting AUTH_TOKENS_FILE (--auth-tokens-file): %w", err)
		}
		static = append(static, s)
	}
	u := users{authn: static, sessions: auth.Sessions{Static: static}}
	if cfg.OIDCIssuer != "" {
		o, err := auth.NewOIDC(ctx, cfg.OIDCIssuer, cfg.OIDCAudience, cfg.OIDCRoleClaim)
		if err != nil {
			return users{}, fmt.Errorf("invalid setting OIDC_ISSUER (--oidc-issuer): %w", err)
		}
		u.authn = append(static, o)
		u.sessions.Issuer = &auth.TokenEndpoint{URL: o.TokenURL(), ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret}
	} else if len(static) == 0 {
		return users{}, errors.New("no user authentication is configured: set OIDC_ISSUER and OIDC_AUDIENCE, or AUTH_TOKENS_FILE")
	}
	return u, nil
}

// devAdminToken returns dev's admin token, kept in <data-dir>/admin.token
// (mode 0600) so it survives restarts; it is made on first start.
func devAdminToken(dataDir string) (string, string, error) {
	path := filepath.Join(dataDir, "admin.token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), path, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token := hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, path, nil
}

// server is every listener's server: bounded by the HTTP_* settings, and
// refusing smuggled requests (smuggling.go) on whatever listener it serves.
type server struct{ *http.Server }

func httpServer(c config.HTTPServer, h http.Handler) server {
	return server{&http.Server{Handler: refuseSmuggling(h), ConnContext: connContext,
		ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout,
		WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: c.MaxHeaderBytes}}
}

// Serve serves ln, watching its connections for smuggled requests.
func (s server) Serve(ln net.Listener) error { return s.Server.Serve(smugglingListener{ln}) }

// serveAPI serves the REST API until ctx ends, then drains requests.
func (p parts) serveAPI(ctx context.Context, ln net.Listener, u users) error {
	cs, err := p.kubeClient()
	if err != nil {
		return err
	}
	opts := p.installation().APIOptions(p.temporal, p.store, cs)
	opts.Namespace, opts.WebUI = p.cfg.TemporalNamespace, p.cfg.TemporalUIURL
	opts.BridgePorts, opts.BridgePortsRaw = p.cfg.BridgePorts, p.cfg.BridgePortsRaw
	opts.Logger, opts.Auth, opts.Sessions, opts.Limits = p.log, u.authn, u.sessions, p.cfg.Limits
	opts.TrustedProxies = p.cfg.TrustedProxies
	opts.Ready = func(ctx context.Context) error { _, err := p.temporal.CheckHealth(ctx, nil); return err }
	h := api.New(opts)
	srv := httpServer(p.cfg.HTTP, h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// kubeClient reaches the cluster on the Kubernetes control plane (in
// cluster, or out of it through KUBECONFIG / ~/.kube/config); nil elsewhere.
func (p parts) kubeClient() (kubernetes.Interface, error) {
	if !p.cfg.ControlPlane.Kubernetes() {
		return nil, nil
	}
	cs, err := kube.NewClient("")
	if err != nil {
		return nil, fmt.Errorf("connect to Kubernetes: %w", err)
	}
	return cs, nil
}

// runWorker polls the task queue and resyncs until ctx ends.
func (p parts) runWorker(ctx context.Context) error {
	cs, err := p.kubeClient()
	if err != nil {
		return err
	}
	// A worker that stops on a fatal error (its namespace deleted, say)
	// ends the process, so a supervisor restarts it instead of keeping an
	// idle process that looks healthy.
	ctx, fatal := context.WithCancelCause(ctx)
	defer fatal(nil)
	w := p.installation().Worker(p.temporal, p.store, cs, func(err error) { fatal(fmt.Errorf("worker stopped: %w", err)) })
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	p.log.Info("svcbridge worker polling", "taskQueue", p.cfg.TaskQueue, "temporal", p.cfg.TemporalAddress)
	if err := temporalclient.EnsureDriftSchedule(ctx, p.temporal, p.workflowsClient().IDs, p.cfg.TaskQueue, p.cfg.DriftInterval, p.cfg.ControlPlane.Kubernetes()); err != nil {
		p.log.Warn("could not set up the drift check schedule", "error", err)
	}
	probes := []worker.Probe{worker.StoreProbe(p.store)}
	if cs != nil {
		probes = append(probes, worker.KubeProbe(cs))
	}
	go worker.Watch(ctx, p.store, p.workflowsClient(), worker.WatchInterval, probes, p.log)
	worker.Resync(ctx, p.store, p.workflowsClient(), p.cfg.ResyncInterval, p.cfg.ResyncInterval, p.log)
	w.Stop()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func connect(ctx context.Context, cfg config.Config, dbURL string) (parts, error) {
	p := parts{cfg: cfg, log: newLogger(cfg)}
	var err error
	if p.store, err = store.OpenPool(ctx, dbURL, cfg.Pool); err != nil {
		return p, err
	}
	if p.temporal, err = dialTemporal(ctx, cfg, p.log); err != nil {
		p.store.Close()
		return p, err
	}
	if err := temporalclient.RegisterSearchAttributes(ctx, p.temporal, cfg.TemporalNamespace); err != nil {
		p.log.Warn("could not register the search attributes; add them to the namespace once (see the README)", "error", err)
	}
	p.unwatch = metrics.Watch(metrics.Source{Store: p.store, Pollers: p.workflowsClient().Pollers, TaskQueue: cfg.TaskQueue})
	return p, nil
}

func (p parts) close() {
	p.unwatch()
	p.temporal.Close()
	p.store.Close()
}

func runAPIRole(ctx context.Context, cfg config.Config) error {
	if err := requireDatabase(cfg); err != nil {
		return err
	}
	u, err := authenticator(ctx, cfg)
	if err != nil {
		return err
	}
	p, err := connect(ctx, cfg, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer p.close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("invalid setting LISTEN (--listen): %w", err)
	}
	p.log.Info("svcbridge api listening", "url", "http://"+ln.Addr().String())
	return p.serveAPI(ctx, ln, u)
}

func runWorkerRole(ctx context.Context, cfg config.Config) error {
	if err := requireDatabase(cfg); err != nil {
		return err
	}
	p, err := connect(ctx, cfg, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer p.close()
	if cfg.MetricsListen != "" {
		ln, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			return fmt.Errorf("invalid setting METRICS_LISTEN (--metrics-listen): %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
		srv := httpServer(cfg.HTTP, mux)
		go srv.Serve(ln)
		defer srv.Close()
	}
	return p.runWorker(ctx)
}

// devSystem is everything `svcbridge dev` runs in one process: the
// embedded Temporal server (and UI), the store, the API listener with its
// admin token, ready to run.
type devSystem struct {
	parts
	// worker is parts with a store of the worker's own on PostgreSQL,
	// as the api and worker processes have: its reconciles, retrying
	// through an outage, never hold the connections and write slots the
	// API needs to answer 503 at once. SQLite keeps its one writer.
	worker    parts
	temporal  *devserver.Server
	ln        net.Listener
	users     users
	token     string
	tokenPath string
	unlock    func() // releases the data directory
}

// devMemoryLimit is the embedded setup's soft memory limit unless
// GOMEMLIMIT sets one: API, worker and Temporal server share one Go heap,
// which would otherwise grow to twice its live size between collections.
// The live heap with 10,000 services is about 70-95 MB, but after a churn
// of creates and deletes its spans hold 140 MB: at 150 MiB the collector
// then ran back to back on any steady allocation (a console's watch),
// half of the machine's 2 cores, where 256 MiB leaves it room.
const devMemoryLimit = 256 << 20

// startDev starts the embedded Temporal server and connects the store
// (DATABASE_URL, else SQLite in the data dir); uiPort -1 means no UI. A
// start that fails stops what it started and removes the data directory
// when it made it.
func startDev(ctx context.Context, cfg config.Config, listen string, uiPort int) (_ *devSystem, err error) {
	log := newLogger(cfg)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(devMemoryLimit)
	}
	removeDataDir, err := makeDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	d := &devSystem{unlock: unlock}
	// The directory goes while it is still locked: no other dev is in it.
	defer func() {
		if err != nil {
			d.stop()
			removeDataDir()
			unlock()
		}
	}()
	if d.token, d.tokenPath, err = devAdminToken(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("admin token in DATA_DIR: %w", err)
	}
	admin, err := auth.NewStatic(auth.StaticToken{Name: "dev-admin", Role: string(auth.Admin), Token: d.token})
	if err != nil {
		return nil, err
	}
	if d.users, err = authenticator(ctx, cfg, admin); err != nil {
		return nil, err
	}
	d.temporal, err = devserver.Start(ctx, devserver.Options{
		DataDir: cfg.DataDir, FrontendPort: cfg.TemporalPort, UIPort: uiPort,
		Namespace: cfg.TemporalNamespace, Logger: log.With("component", "temporal-server"),
	})
	if err != nil {
		return nil, devserverError(err)
	}
	cfg.TemporalAddress = d.temporal.FrontendAddress()
	// Services link their workflows in dev's own UI, unless set.
	if uiPort != -1 && cfg.TemporalUIURL == "" {
		cfg.TemporalUIURL = d.temporal.UIURL()
	}
	dbURL := cfg.DatabaseURL
	if dbURL == "" {
		dbURL = filepath.Join(cfg.DataDir, "svcbridge.db")
	}
	if d.parts, err = connect(ctx, cfg, dbURL); err != nil {
		d.parts = parts{} // connect closed what it opened
		return nil, err
	}
	d.worker = d.parts
	if d.store.Dialect() == store.Postgres {
		if d.worker.store, err = store.OpenPool(ctx, dbURL, cfg.Pool); err != nil {
			return nil, err
		}
	}
	if d.ln, err = net.Listen("tcp", listen); err != nil {
		return nil, fmt.Errorf("invalid setting LISTEN (--listen): %w", err)
	}
	return d, nil
}

// devserverError names the flag of a port the embedded Temporal could not
// listen on.
func devserverError(err error) error {
	var perr *devserver.PortError
	if !errors.As(err, &perr) {
		return fmt.Errorf("start embedded Temporal: %w", err)
	}
	flag := "--temporal-port"
	if perr.UI {
		flag = "--ui-port"
	}
	if errors.Is(perr.Err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s %d is in use: %w (stop what listens there, or choose another %s)", flag, perr.Port, perr.Err, flag)
	}
	return fmt.Errorf("%s %d: %w", flag, perr.Port, perr.Err)
}

// run serves the API and runs the worker until ctx ends.
func (d *devSystem) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.serveAPI(gctx, d.ln, d.users) })
	g.Go(func() error { return d.worker.runWorker(gctx) })
	return g.Wait()
}

func (d *devSystem) close() {
	d.stop()
	d.unlock()
}

// stop stops what startDev started, as far as it got.
func (d *devSystem) stop() {
	if d.worker.store != nil && d.worker.store != d.store {
		d.worker.store.Close()
	}
	if d.store != nil {
		d.parts.close()
	}
	if d.temporal != nil {
		d.temporal.Stop()
	}
}

// saveDevContext adds dev's server and admin token as the CLI's context
// dev, or dev-<port> while another running dev holds dev (see
// cli.AddDevContext); it becomes current only when no context is. A
// wildcard listen address is reached on loopback.
func saveDevContext(addr net.Addr, token string) (path, name string, current bool, err error) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", "", false, err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	path = cli.ConfigPath()
	name, current, err = cli.AddDevContext(path, cli.Context{Server: "http://" + net.JoinHostPort(host, port), Token: token}, os.Stderr)
	return path, name, current, err
}

// runDev runs everything in one process on loopback.
func runDev(ctx context.Context, cfg config.Config) error {
	d, err := startDev(ctx, cfg, cfg.Listen, cfg.UIPort)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Printf("svcbridge dev is running (control plane %s, store %s)\n", cfg.ControlPlane, d.store.Dialect())
	fmt.Printf("  API:             http://%s/api/v3/services\n", d.ln.Addr())
	fmt.Printf("  Console:         http://%s/console/ (sign in with the admin token)\n", d.ln.Addr())
	fmt.Printf("  Temporal Web UI: %s/namespaces/%s/workflows\n", d.temporal.UIURL(), d.temporal.Namespace())
	fmt.Printf("  Temporal:        %s (namespace %s)\n", d.temporal.FrontendAddress(), d.temporal.Namespace())
	fmt.Printf("  Admin token:     in %s; curl needs\n", d.tokenPath)
	fmt.Printf("                   -H \"Authorization: Bearer $(cat %s)\"\n", d.tokenPath)
	// The CLI finds this server from any directory, as kind and minikube
	// make kubectl find theirs.
	if path, name, current, err := saveDevContext(d.ln.Addr(), d.token); err != nil {
		d.log.Warn("could not save the CLI context dev; the CLI still reads the admin token in the data directory", "error", err)
	} else if current {
		fmt.Printf("  CLI context:     %s in %s (current)\n", name, path)
	} else {
		fmt.Printf("  CLI context:     %s in %s (not current: svcbridge config use-context %s)\n", name, path, name)
	}
	fmt.Println("Press Ctrl-C to stop.")
	err = d.run(ctx)
	fmt.Println("svcbridge dev stopped")
	return err
}
