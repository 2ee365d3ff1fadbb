// Package devserver runs a real Temporal server (frontend, history, matching
// and worker services on SQLite) and the Temporal Web UI inside the current
// process, so that `svcbridge dev` and the tests need no separately installed
// Temporal: the machines this project runs on cannot download the temporal CLI.
//
// Only one Server may use a given DataDir at a time.
package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	defaultIP        = "127.0.0.1"
	defaultNamespace = "default"

	// dbFileName is the SQLite file inside Options.DataDir; visibility's
	// is visibilityFileName beside it.
	dbFileName         = "temporal.db"
	visibilityFileName = "visibility.db"
	// clusterName names the single local cluster; it is persisted in the
	// database, so it must never change for an existing DataDir.
	clusterName = "active"
	// storeName and visibilityStoreName are the persistence store keys in
	// the server config.
	storeName           = "sqlite-default"
	visibilityStoreName = "sqlite-visibility"

	// serviceNameAttr is the Keyword search attribute svcbridge sets on its
	// workflows so that the Web UI can filter them by service.
	serviceNameAttr = "ServiceName"
	// statusAttr carries a service's provisioning status, so that the Web
	// UI lists failed services with ProvisioningStatus="failed".
	statusAttr = "ProvisioningStatus"

	// readyTimeout bounds the wait for the frontend (and UI) to answer; a
	// cold start on a small shared machine can take several seconds.
	readyTimeout = 60 * time.Second
	// namespaceRefresh is how often each service's namespace cache reads
	// the namespaces again (Temporal's default).
	namespaceRefresh = 2 * time.Second
)

// Options configures Start. The zero value is an in-memory server on
// 127.0.0.1 with the frontend and the UI on free ports; `svcbridge dev`
// passes the usual 7233 and 8233.
type Options struct {
	DataDir      string       // SQLite files DataDir/temporal.db and visibility.db (created if missing; schema set up once); "" = in-memory
	IP           string       // default "127.0.0.1"; every port binds here
	FrontendPort int          // gRPC frontend, usually 7233; 0 = pick a free port
	UIPort       int          // Web UI HTTP port; 0 = pick a free port; -1 = no UI
	Namespace    string       // default "default"; created if missing
	Logger       *slog.Logger // server logs go here at WARN and above only (Temporal is chatty); nil = discard
}

// Server is a running in-process Temporal server and, optionally, its Web UI.
type Server struct {
	srv       temporal.Server
	ui        *uiserver.Server
	uiDone    chan struct{} // closed when the UI goroutine returns
	frontend  string
	uiURL     string
	namespace string
	logLevel  *slog.LevelVar // minimum level of server logs; raised by Stop

	stopOnce sync.Once
	stopErr  error
}

// FrontendAddress is the host:port of the gRPC frontend, for client.Options.HostPort.
func (s *Server) FrontendAddress() string { return s.frontend }

// UIURL is the base URL of the Web UI, or "" when it was disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Namespace is the namespace that Start made sure exists.
func (s *Server) Namespace() string { return s.namespace }

// Start starts the server and returns once the frontend answers gRPC health
// checks (and the UI answers HTTP, if enabled). ctx bounds only the start-up;
// the server keeps running until Stop.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := withDefaults(o)
	if err != nil {
		return nil, err
	}
	logLevel := new(slog.LevelVar)
	logLevel.Set(slog.LevelWarn)
	logger := serverLogger{slog.New(minLevelHandler{logLevel, o.Logger.Handler()})}

	// Ports the caller asked for by number are checked up front: the server
	// treats a failed listen as fatal (it panics), the UI calls os.Exit.
	if o.FrontendPort != 0 {
		if err := checkPortFree(o.IP, o.FrontendPort); err != nil {
			return nil, fmt.Errorf("devserver: frontend port: %w", err)
		}
	}
	if o.UIPort > 0 {
		if err := checkPortFree(o.IP, o.UIPort); err != nil {
			return nil, fmt.Errorf("devserver: UI port: %w", err)
		}
	}
	need := 4 // history, matching, worker, frontend HTTP
	if o.FrontendPort == 0 {
		need++
	}
	if o.UIPort == 0 {
		need++
	}
	free, err := freePorts(o.IP, need)
	if err != nil {
		return nil, fmt.Errorf("devserver: picking free ports: %w", err)
	}
	take := func() int { p := free[0]; free = free[1:]; return p }
	if o.FrontendPort == 0 {
		o.FrontendPort = take()
	}
	if o.UIPort == 0 {
		o.UIPort = take()
	}
	ports := map[primitives.ServiceName]int{
		primitives.FrontendService: o.FrontendPort,
		primitives.HistoryService:  take(),
		primitives.MatchingService: take(),
		primitives.WorkerService:   take(),
	}
	// The frontend's HTTP API is what Nexus callbacks use; the server warns
	// at every start without it, so give it a port like the CLI does.
	httpPort := take()

	sqlCfg, visCfg, err := prepareSQLite(o)
	if err != nil {
		return nil, err
	}

	frontend := net.JoinHostPort(o.IP, strconv.Itoa(o.FrontendPort))
	srv, err := temporal.NewServer(
		temporal.WithConfig(serverConfig(o.IP, frontend, ports, httpPort, sqlCfg, visCfg)),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: no ringpop gossip, so no membership ports to
		// allocate and no cross-talk between two servers in one process.
		temporal.WithStaticHosts(staticHosts(o.IP, ports)),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("devserver: creating server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: starting server: %w", err)
	}
	s := &Server{srv: srv, frontend: frontend, namespace: o.Namespace, logLevel: logLevel}

	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := waitFrontendAndEnsureAttrs(ctx, frontend, o.Namespace, o.Logger); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if o.UIPort > 0 {
		if err := s.startUI(ctx, o, frontend); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// Stop stops the UI, then the server. Calling it again returns the first result.
//
// Server logs below ERROR are dropped from the start of Stop (shutdown
// produces a burst of harmless warnings), and all of them after it: the
// server leaves gRPC connections behind that keep redialling its closed
// ports with back-off, and each failed dial would log a warning.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.logLevel.Set(slog.LevelError)
		defer s.logLevel.Set(logOff)
		if s.ui != nil {
			s.ui.Stop()
			select {
			case <-s.uiDone:
			case <-time.After(5 * time.Second):
			}
		}
		s.stopErr = s.srv.Stop()
	})
	return s.stopErr
}

func withDefaults(o Options) (Options, error) {
	if o.IP == "" || o.IP == "localhost" {
		// The server needs a literal IP to bind and to advertise.
		o.IP = defaultIP
	}
	ip := net.ParseIP(o.IP)
	if ip == nil {
		return o, fmt.Errorf("devserver: IP %q is not an IP address", o.IP)
	}
	o.IP = ip.String()
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return o, fmt.Errorf("devserver: invalid frontend port %d", o.FrontendPort)
	}
	if o.UIPort < -1 || o.UIPort > 65535 {
		return o, fmt.Errorf("devserver: invalid UI port %d", o.UIPort)
	}
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// prepareSQLite builds the SQLite persistence configs of the default store
// and of visibility, creating the schema of a new database file and the
// namespace (with its search attributes) if missing. Both run before the
// server starts, as the server cannot create its own schema.
//
// Visibility has a database of its own because the SQLite plugin gives each
// database one connection for the whole server: in one file, every
// visibility write (a fifth of the server's work) queued with the history
// writes a reconcile waits for. A DataDir made before keeps its visibility
// records in temporal.db, where the Web UI finds them.
func prepareSQLite(o Options) (store, visibility *config.SQL, err error) {
	if o.DataDir == "" {
		// A shared-cache memory database is global to the process by name,
		// so every server needs its own; the plugin sets its schema up.
		name := fmt.Sprintf("devserver-%d-%d", os.Getpid(), rand.Int64())
		memory := func(db string) *config.SQL {
			return &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
				ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"}}
		}
		store, visibility = memory(name), memory(name+"-visibility")
	} else {
		if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("devserver: data dir: %w", err)
		}
		path := filepath.Join(o.DataDir, dbFileName)
		fresh, err := freshFile(path)
		if err != nil {
			return nil, nil, err
		}
		if store, err = fileDB(path, fresh); err != nil {
			return nil, nil, err
		}
		visibility = store
		path = filepath.Join(o.DataDir, visibilityFileName)
		freshVis, err := freshFile(path)
		if err != nil {
			return nil, nil, err
		}
		if fresh || !freshVis {
			if visibility, err = fileDB(path, freshVis); err != nil {
				return nil, nil, err
			}
		}
		if err := dropUnusedVisibilityIndexes(visibility.DatabaseName); err != nil {
			return nil, nil, err
		}
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, searchAttrs())
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: namespace config: %w", err)
	}
	// CreateNamespaces skips a namespace that exists; a constraint error can
	// still surface if the lookup failed, and means the same thing.
	if err := sqliteschema.CreateNamespaces(store, ns); err != nil && !isAlreadyExists(err) {
		return nil, nil, fmt.Errorf("devserver: creating namespace %q: %w", o.Namespace, err)
	}
	return store, visibility, nil
}

// freshFile tells whether path does not exist yet.
func freshFile(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("devserver: %w", err)
	}
	return false, nil
}

// fileDB is the config of the SQLite file at path, whose schema it sets up
// when the file is fresh. The schema holds both stores' tables; each file
// uses its own.
func fileDB(path string, fresh bool) (*config.SQL, error) {
	cfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: path, ConnectAttributes: map[string]string{
		"mode": "rwc",
		// WAL with synchronous=NORMAL is several times faster than the
		// default rollback journal and still survives a process crash.
		// The plugin passes unknown attributes on as pragmas, unprefixed.
		"journal_mode": "wal",
		"synchronous":  "1",
	}}
	if fresh {
		if err := sqliteschema.SetupSchema(cfg); err != nil {
			return nil, fmt.Errorf("devserver: setting up schema in %s (delete the file to retry): %w", path, err)
		}
	}
	return cfg, nil
}

// unusedVisibilityIndexes are the indexes of Temporal's SQLite visibility
// schema on what neither svcbridge nor the Web UI filters by: the custom
// search attribute slots that are not Keyword (svcbridge's are), the CHASM
// slots, and schedule, batch, deployment, pause and size attributes. Every
// visibility write (two per create) updated all 58 indexes; with these 37
// gone a fill spends less on visibility. A query on one of them still
// works: it scans the dev server's rows.
var unusedVisibilityIndexes = []string{
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
	"by_batcher_user", "by_temporal_scheduled_start_time", "by_temporal_scheduled_by_id", "by_temporal_schedule_paused",
	"by_temporal_pause_info", "by_temporal_worker_deployment_version", "by_temporal_workflow_versioning_behavior",
	"by_temporal_worker_deployment",
	"by_bool_01", "by_bool_02", "by_bool_03", "by_datetime_01", "by_datetime_02", "by_datetime_03",
	"by_double_01", "by_double_02", "by_double_03", "by_int_01", "by_int_02", "by_int_03",
	"by_temporal_bool_01", "by_temporal_bool_02", "by_temporal_datetime_01", "by_temporal_datetime_02",
	"by_temporal_double_01", "by_temporal_double_02", "by_temporal_int_01", "by_temporal_int_02",
	"by_temporal_keyword_01", "by_temporal_keyword_02", "by_temporal_keyword_03", "by_temporal_keyword_04",
	"by_temporal_low_cardinality_keyword_01",
}

// dropUnusedVisibilityIndexes drops unusedVisibilityIndexes from the
// SQLite file at path, before the server opens it; done once, it finds
// nothing to do.
func dropUnusedVisibilityIndexes(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return fmt.Errorf("devserver: %w", err)
	}
	defer db.Close()
	for _, index := range unusedVisibilityIndexes {
		if _, err := db.Exec(`DROP INDEX IF EXISTS ` + index); err != nil {
			return fmt.Errorf("devserver: dropping the visibility index %s from %s: %w", index, path, err)
		}
	}
	return nil
}

func isAlreadyExists(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "already exists") || strings.Contains(msg, "UNIQUE constraint failed")
}

// serverConfig is the static config of a single-node, single-shard cluster
// with every service bound to ip.
func serverConfig(ip, frontend string, ports map[primitives.ServiceName]int, httpPort int, store, visibility *config.SQL) *config.Config {
	conf := &config.Config{}
	conf.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}
	// Global.Metrics stays nil: no metrics listener at all, one port fewer.
	conf.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  visibilityStoreName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{storeName: {SQL: store}, visibilityStoreName: {SQL: visibility}},
	}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(ip, strconv.Itoa(httpPort)),
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	for svc, port := range ports {
		var c config.Service
		c.RPC.GRPCPort = port
		c.RPC.BindOnIP = ip
		if svc == primitives.FrontendService {
			c.RPC.HTTPPort = httpPort
		}
		conf.Services[string(svc)] = c
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's system workflows reach the frontend through this.
	conf.PublicClient.HostPort = frontend
	return conf
}

func staticHosts(ip string, ports map[primitives.ServiceName]int) map[primitives.ServiceName]static.Hosts {
	hosts := make(map[primitives.ServiceName]static.Hosts, len(ports))
	for svc, port := range ports {
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	return hosts
}

// dynamicConfig holds the settings a single-node dev server wants; most
// follow the Temporal CLI's dev server.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// One partition per task queue: partitions only spread load across
		// matching nodes, and there is one node; fewer partitions means less
		// polling and faster task dispatch.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// Search attributes and namespaces are read from caches, not from
		// the store at every use as the Temporal CLI's dev server does
		// (system.forceSearchAttributesCacheRefreshOnRead): that bypass cost
		// a twelfth of a fill's CPU time and queued its reads with the
		// history writes on the store's one connection. Attributes added at
		// start are waited for instead (waitFrontendAndEnsureAttrs).
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): namespaceRefresh,
		// Raise the persistence rate limits as the CLI does (same 2:9 ratio
		// as the defaults): a fill makes thousands of calls a second.
		dynamicconfig.FrontendPersistenceMaxQPS.Key(): 10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():  45000,
		// The Web UI lists and counts workflows often; 10 RPS is too low.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// A dev box does not need a 128k-entry mutable state cache; every
		// service's workflow stays open, so the cache would grow with them.
		// A pass touches its workflow for tens of milliseconds: a few
		// hundred entries cover 50 clients' creates.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 256,
		// The cross-cluster (XDC) events cache serves replication, which a
		// single dev server never does.
		dynamicconfig.XDCCacheMaxSizeBytes.Key(): 256 << 10,
		// The history service's task schedulers start 512 workers each, and
		// replication's 640 more on a server that never replicates: about
		// 2,200 idle goroutines that every GC scans, for one shard whose
		// store writes one at a time anyway.
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():                  32,
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():               32,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key():             32,
		dynamicconfig.ReplicationProcessorSchedulerWorkerCount.Key():            1,
		dynamicconfig.ReplicationLowPriorityProcessorSchedulerWorkerCount.Key(): 1,
		// Workflow Update (svcbridge may use UpdateWithStart); on by default
		// in v1.31, set explicitly so a default change cannot surprise us.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
	}
}

// searchAttrs are the Keyword attributes svcbridge's workflows set.
func searchAttrs() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		serviceNameAttr: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		statusAttr:      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// waitFrontendAndEnsureAttrs waits until the frontend answers, then makes
// sure the namespace has svcbridge's search attributes: a namespace created
// by an older DataDir may predate them, and CreateNamespaces never updates
// one.
func waitFrontendAndEnsureAttrs(ctx context.Context, frontend, namespace string, logger *slog.Logger) error {
	var c client.Client
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		cl, err := client.DialContext(attemptCtx, client.Options{
			HostPort:  frontend,
			Namespace: namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(minLevelHandler{slog.LevelWarn, logger.Handler()})),
		})
		if err == nil {
			_, err = cl.CheckHealth(attemptCtx, &client.CheckHealthRequest{})
			if err == nil {
				cancel()
				c = cl
				break
			}
			cl.Close()
		}
		cancel()
		lastErr = err
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("devserver: frontend %s not ready: %w (last error: %v)", frontend, err, lastErr)
		}
	}
	defer c.Close()

	ops := c.OperatorService()
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("devserver: listing search attributes: %w", err)
	}
	missing := searchAttrs()
	for name := range resp.GetCustomAttributes() {
		delete(missing, name)
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("devserver: adding search attributes: %w", err)
	}
	// Each service's namespace cache learns them at its next refresh: once
	// the frontend's lists them, one more interval covers the others', so
	// no workflow fails to set one.
	for {
		resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err != nil {
			return fmt.Errorf("devserver: listing search attributes: %w", err)
		}
		listed := 0
		for name := range missing {
			if _, ok := resp.GetCustomAttributes()[name]; ok {
				listed++
			}
		}
		if listed == len(missing) {
			break
		}
		if err := sleep(ctx, namespaceRefresh/4); err != nil {
			return fmt.Errorf("devserver: waiting for the search attributes added: %w", err)
		}
	}
	return sleep(ctx, namespaceRefresh)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// startUI runs the Web UI in a goroutine (its Start blocks) and waits until
// it answers HTTP, so that Stop never races a listener still being opened.
func (s *Server) startUI(ctx context.Context, o Options, frontend string) error {
	host := o.IP
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // the UI joins host and port with a plain ":"
	}
	s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                o.UIPort,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true}, // plain HTTP
		HideLogs:            true,
		DisableNewsFetch:    true, // no outside network on these machines
	}))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		if err := s.ui.Start(); err != nil {
			o.Logger.Error("temporal UI stopped", "error", err)
		}
	}()
	s.uiURL = "http://" + net.JoinHostPort(o.IP, strconv.Itoa(o.UIPort))

	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.uiURL+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: UI %s not ready: %w (last error: %v)", s.uiURL, ctx.Err(), err)
		case <-s.uiDone:
			return fmt.Errorf("devserver: UI on %s exited during start-up", s.uiURL)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Ports handed out recently in this process, so that two servers starting
// at the same time never get the same "free" port between our probe and
// the server's own listen.
var (
	portsMu     sync.Mutex
	portsHanded = map[int]time.Time{}
)

// freePorts returns n distinct ports that are free on ip now. All probe
// listeners stay open until all n are chosen, so the kernel cannot repeat one.
func freePorts(ip string, n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	now := time.Now()
	for p, t := range portsHanded {
		if now.Sub(t) > time.Minute {
			delete(portsHanded, p)
		}
	}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free ports")
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		p := l.Addr().(*net.TCPAddr).Port
		if _, recent := portsHanded[p]; recent {
			continue
		}
		portsHanded[p] = now
		ports = append(ports, p)
	}
	return ports, nil
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// serverLogger adapts Temporal's logger interface to slog, dropping Debug
// and Info before any tag is formatted: the server logs a lot at those
// levels and formatting its tags is not free.
type serverLogger struct{ l *slog.Logger }

var (
	_ tlog.Logger      = serverLogger{}
	_ tlog.WithLogger  = serverLogger{}
	_ tlog.SLogWrapper = serverLogger{}
)

func (s serverLogger) Debug(string, ...tag.Tag)           {}
func (s serverLogger) Info(string, ...tag.Tag)            {}
func (s serverLogger) Warn(msg string, tags ...tag.Tag)   { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag)  { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) SLog() *slog.Logger                 { return s.l }
func (s serverLogger) With(tags ...tag.Tag) tlog.Logger {
	return serverLogger{slog.New(s.l.Handler().WithAttrs(attrs(tags)))}
}
func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal panics instead of exiting: the server calls it when it cannot go on
// (e.g. a port it must listen on is taken) and does not expect it to return;
// a library must not os.Exit its host, and a panic shows where it happened.
func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if s.l.Enabled(ctx, level) {
		s.l.LogAttrs(ctx, level, msg, attrs(tags)...)
	}
}

func attrs(tags []tag.Tag) []slog.Attr {
	out := make([]slog.Attr, len(tags))
	for i, t := range tags {
		out[i] = slog.Any(t.Key(), t.Value())
	}
	return out
}

// logOff is a level above any record's: it turns a minLevelHandler off.
const logOff = slog.Level(1 << 20)

// minLevelHandler passes on only records at min or above.
type minLevelHandler struct {
	min slog.Leveler
	h   slog.Handler
}

func (m minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min.Level() && m.h.Enabled(ctx, l)
}
func (m minLevelHandler) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevelHandler{m.min, m.h.WithAttrs(a)}
}
func (m minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{m.min, m.h.WithGroup(name)}
}
