// Package devserver runs a real Temporal server (frontend, history, matching
// and worker services on SQLite) and the Temporal Web UI inside the current
// process, so that `svcbridge dev` and the tests need no separately installed
// Temporal: the machines this project runs on cannot download the temporal CLI.
//
// Only one Server may use a given DataDir at a time.
package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/primitives"
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
			return nil, &PortError{Port: o.FrontendPort, Err: err}
		}
	}
	if o.UIPort > 0 {
		if err := checkPortFree(o.IP, o.UIPort); err != nil {
			return nil, &PortError{Port: o.UIPort, UI: true, Err: err}
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
	if err := waitFrontend(ctx, frontend, o.Namespace, o.Logger); err != nil {
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
