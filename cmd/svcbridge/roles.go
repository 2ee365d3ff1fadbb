package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"golang.org/x/sync/errgroup"

	"svcbridge/activities"
	"svcbridge/api"
	"svcbridge/config"
	"svcbridge/devserver"
	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/worker"
	"svcbridge/workflows"
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
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Println("migrations applied")
	return st.Close()
}

func dialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger) (client.Client, error) {
	handler, _ := metrics.Temporal()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:       cfg.TemporalAddress,
		Namespace:      cfg.TemporalNamespace,
		Logger:         sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
		MetricsHandler: handler,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (TEMPORAL_ADDRESS): %w", cfg.TemporalAddress, err)
	}
	return c, nil
}

// parts are what the roles share once store and Temporal are connected.
type parts struct {
	cfg      config.Config
	log      *slog.Logger
	store    *store.Store
	temporal client.Client
}

func (p parts) workflowsClient() workflows.Client {
	return workflows.Client{Temporal: p.temporal, TaskQueue: p.cfg.TaskQueue}
}

// serveAPI serves the REST API until ctx ends, then drains requests.
func (p parts) serveAPI(ctx context.Context, ln net.Listener) error {
	h := api.New(api.Options{
		Store: p.store, Reconciler: p.workflowsClient(), ControlPlane: p.cfg.ControlPlane,
		BridgePorts: p.cfg.BridgePorts, BridgePortsRaw: p.cfg.BridgePortsRaw,
		Tags: service.TagRule{Prefix: p.cfg.TagPrefix}, Logger: p.log,
		Ready: func(ctx context.Context) error { _, err := p.temporal.CheckHealth(ctx, nil); return err },
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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

// runWorker polls the task queue and resyncs until ctx ends.
func (p parts) runWorker(ctx context.Context) error {
	acts := &activities.Activities{Store: p.store, Tags: service.TagRule{Prefix: p.cfg.TagPrefix},
		ControlPlane: p.cfg.ControlPlane, Signaler: p.workflowsClient(), KubeConfig: p.cfg.Kube}
	if p.cfg.ControlPlane == service.ControlPlaneKubernetes {
		// In cluster, or out of it through KUBECONFIG / ~/.kube/config.
		cs, err := kube.NewClient("")
		if err != nil {
			return fmt.Errorf("connect to Kubernetes: %w", err)
		}
		acts.Kube = cs
	}
	w := worker.New(p.temporal, p.cfg.TaskQueue, acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if err := workflows.EnsureDriftSchedule(ctx, p.temporal, p.cfg.TaskQueue, p.cfg.DriftInterval); err != nil {
		p.log.Warn("could not set up the drift check schedule", "error", err)
	}
	worker.Resync(ctx, p.store, p.workflowsClient(), p.cfg.ResyncInterval, p.cfg.ResyncInterval, p.log)
	w.Stop()
	return nil
}

func connect(ctx context.Context, cfg config.Config, dbURL string) (parts, error) {
	p := parts{cfg: cfg, log: newLogger(cfg)}
	var err error
	if p.store, err = store.Open(ctx, dbURL); err != nil {
		return p, err
	}
	if p.temporal, err = dialTemporal(ctx, cfg, p.log); err != nil {
		p.store.Close()
		return p, err
	}
	if err := workflows.RegisterSearchAttributes(ctx, p.temporal, cfg.TemporalNamespace); err != nil {
		p.log.Warn("could not register the ServiceName search attribute; add it to the namespace once", "error", err)
	}
	return p, nil
}

func (p parts) close() {
	p.temporal.Close()
	p.store.Close()
}

func runAPIRole(ctx context.Context, cfg config.Config) error {
	if err := requireDatabase(cfg); err != nil {
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
	return p.serveAPI(ctx, ln)
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
	p.log.Info("svcbridge worker polling", "taskQueue", cfg.TaskQueue, "temporal", cfg.TemporalAddress)
	if cfg.MetricsListen != "" {
		ln, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			return fmt.Errorf("invalid setting METRICS_LISTEN (--metrics-listen): %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	return p.runWorker(ctx)
}

// runDev runs everything in one process on loopback.
func runDev(ctx context.Context, cfg config.Config) error {
	log := newLogger(cfg)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("invalid setting DATA_DIR (--data-dir): %w", err)
	}
	ts, err := devserver.Start(ctx, devserver.Options{
		DataDir: cfg.DataDir, FrontendPort: cfg.TemporalPort, UIPort: cfg.UIPort,
		Namespace: cfg.TemporalNamespace, Logger: log.With("component", "temporal-server"),
	})
	if err != nil {
		return fmt.Errorf("start embedded Temporal: %w", err)
	}
	defer ts.Stop()
	cfg.TemporalAddress = ts.FrontendAddress()
	dbURL := cfg.DatabaseURL
	if dbURL == "" {
		dbURL = filepath.Join(cfg.DataDir, "svcbridge.db")
	}
	p, err := connect(ctx, cfg, dbURL)
	if err != nil {
		return err
	}
	defer p.close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("invalid setting LISTEN (--listen): %w", err)
	}
	fmt.Printf("svcbridge dev is running (control plane %s, store %s)\n", cfg.ControlPlane, p.store.Dialect())
	fmt.Printf("  API:             http://%s/api/v3/services\n", ln.Addr())
	fmt.Printf("  Temporal Web UI: %s/namespaces/%s/workflows\n", ts.UIURL(), ts.Namespace())
	fmt.Printf("  Temporal:        %s (namespace %s)\n", ts.FrontendAddress(), ts.Namespace())
	fmt.Println("Press Ctrl-C to stop.")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.serveAPI(gctx, ln) })
	g.Go(func() error { return p.runWorker(gctx) })
	err = g.Wait()
	fmt.Println("svcbridge dev stopped")
	return err
}
