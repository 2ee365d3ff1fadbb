// Package api is svcbridge's REST API (gin): the inventory, Services, and
// the pull API agents use. Handlers validate fully before writing, write in
// one transaction, then ask the Reconciler to converge the routers.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"

	"svcbridge/auth"
	"svcbridge/buildinfo"
	"svcbridge/document"
	"svcbridge/metrics"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
	"svcbridge/workflows"
)

// What a route reads at most. Reading and checking a JSON body costs the
// api about 10 ns a byte and a YAML one 30 times that, so the limits, set
// well above what the routes need, are what bound the cost of a body that
// holds nothing a route reads (a normal write costs about 0.2 ms):
//   - MaxBody: a JSON document (a service, an agent, a microservice), a
//     few hundred bytes, more with long Kubernetes annotations;
//   - MaxYAMLBody: a YAML upload (the multipart body), the same documents;
//   - SessionMaxBody: the session calls, which anyone may send (a refresh
//     token, an email and a password);
//   - ReportMaxBody: a router's report, an entry per bridge its router
//     refused.
const (
	MaxBody        = 64 << 10
	MaxYAMLBody    = 8 << 10
	SessionMaxBody = 16 << 10
	ReportMaxBody  = 1 << 20
)

// Reconciler starts the durable work after a change is committed. An error
// here does not undo the change: the worker's resync picks it up.
type Reconciler interface {
	// ServiceCreated is ServiceChanged for a service just created: its
	// workflow most likely does not run yet.
	ServiceCreated(ctx context.Context, name string) error
	ServiceChanged(ctx context.Context, name string) error
	// AgentsQueued wakes the reconcile of agents' routers that the write
	// queued in its transaction (store.Tx.QueueAgents): a mark committed
	// with the change survives a crash before this call.
	AgentsQueued(ctx context.Context, uuids ...string) error
}

// Options configure the API.
type Options struct {
	Store      *store.Store
	Reconciler Reconciler
	// IDs names the workflows, for the workflowId the API shows.
	IDs workflows.IDs
	// Namespace is the workflows' Temporal namespace, and WebUI the
	// Temporal Web UI's base URL ("": none): each service answers them
	// and the link to its workflow, so that no client guesses them.
	Namespace, WebUI string
	ControlPlane     service.ControlPlane
	BridgePorts      store.PortRange
	// BridgePortsRaw is the range as configured, for error messages.
	BridgePortsRaw string
	Tags           service.TagRule
	Logger         *slog.Logger
	// Ready reports whether Temporal answers, for /readyz.
	Ready func(context.Context) error
	// Kubernetes reports whether the kube-apiserver answers, for /readyz
	// on the Kubernetes control plane; nil elsewhere.
	Kubernetes func(context.Context) error
	// Pollers reports how many workers poll TaskQueue, for /readyz and
	// pending services (temporalclient.Client.Pollers); nil skips the check.
	Pollers   func(context.Context) (int, error)
	TaskQueue string
	// Auth authenticates the users of /api/v3 (not the agents' pull API).
	Auth auth.Authenticator
	// Sessions answers ioFog clients' /user/refresh and /user/login.
	Sessions auth.Sessions
	// WatchInterval is how often a watch (?watch=true) reads its list
	// again; 0 is DefaultWatchInterval.
	WatchInterval time.Duration
	// ServiceRecheck is how often a long poll on a service reads it again
	// unwoken; 0 is DefaultServiceRecheck.
	ServiceRecheck time.Duration
	// Limits bound watches and failed authentications; zero is DefaultLimits.
	Limits Limits
	// TrustedProxies (addresses and CIDRs) are the proxies whose
	// X-Forwarded-For names the client, for the failed-authentication
	// budgets; none by default: any client can write that header.
	TrustedProxies []string
}

// Server holds the handlers' dependencies.
type Server struct {
	Options
	started time.Time // for the status's uptime
	pollers pollerCache
	// routerDocs are assembled router documents by agent uuid.
	routerDocs *lru.Cache[string, routerDoc]
	// creates bounds this process's service creates in flight
	// (createService).
	creates chan struct{}
	// authLimit and watches hold what Limits bound.
	authLimit *authLimiter
	watches   *watchHub
	// reporting holds the agents whose router report is being read
	// (reportRouter).
	reporting sync.Map
}

// concurrentCreates is how many service creates one API process runs at
// once (each claims its own bridge port, so they run side by side): a
// burst of creates leaves the pool's other connections to reads and
// reconciles.
const concurrentCreates = 4

// New returns the API's http.Handler.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Reconciler = dryRunReconciler{o.Reconciler}
	docs, _ := lru.New[string, routerDoc](routerDocCacheSize) // fails only for a size ≤ 0
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	if o.ServiceRecheck == 0 {
		o.ServiceRecheck = DefaultServiceRecheck
	}
	s := &Server{Options: o, started: time.Now(), routerDocs: docs, creates: make(chan struct{}, concurrentCreates),
		authLimit: newAuthLimiter(o.Limits), watches: newWatchHub(o.Logger, o.Limits, o.WatchInterval)}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := r.SetTrustedProxies(o.TrustedProxies); err != nil {
		panic(fmt.Sprintf("api: trusted proxies: %v", err)) // config.Load checked them
	}
	r.Use(gin.Recovery(), s.observe, s.timestamp)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, wire.Health{Status: "ok", Version: buildinfo.Version()}) })
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", gin.WrapH(metrics.Handler()))
	s.openAPIRoutes(r)
	s.consoleRoutes(r)

	// Users authenticate with their bearer token; agents use their own
	// credential on the pull API only.
	users := r.Group("/api/v3", s.authorize, checkParams, dryRun)
	s.agentRoutes(users)
	s.microserviceRoutes(users)
	s.iofogRoutes(users)
	s.serviceRoutes(users)
	s.eventRoutes(users)
	s.settingsRoutes(users)
	s.selfRoutes(users)
	s.agentPullRoutes(r.Group("/api/v3"))
	s.sessionRoutes(r.Group("/api/v3", withBodyLimit(SessionMaxBody)))
	r.NoRoute(func(c *gin.Context) {
		fail(c, notFound("Route %s %s not found", c.Request.Method, c.Request.URL.Path))
	})
	for _, route := range r.Routes() {
		metrics.InitRoute(route.Method, route.Path)
	}
	return r
}

// checkParams refuses path and query parameters that no field can hold
// (document.TextProblem: invalid UTF-8, control characters) with a 400
// naming the parameter, before any handler reads the store, where
// PostgreSQL would fail on them. A 400 rather than a 404: the request is
// malformed whatever the store holds, since nothing can ever be named so,
// and the answer names the parameter as a body field would be named.
// It refuses query parameters the route does not take (routeParams), as
// unknown body fields are: a mistyped ?limt= would otherwise answer the
// whole list as if it were honoured.
func checkParams(c *gin.Context) {
	for _, p := range c.Params {
		if problem := document.TextProblem(p.Value); problem != "" {
			fail(c, badRequest("Path parameter '%s' %s", p.Key, problem))
			return
		}
	}
	// URL.Query drops a pair it cannot read (limit=1;watch=true) without a
	// word, and the request would be answered as if it were not there.
	query, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		fail(c, badRequest("Malformed query string: %s (separate parameters with &)", truncate(err.Error(), 200)))
		return
	}
	if err := checkTexts("Query parameter", query); err != nil {
		fail(c, err)
		return
	}
	accepted := routeParams[c.Request.Method+" "+c.FullPath()]
	if unknown := unknownParams(accepted, query); len(unknown) > 0 {
		fail(c, unknownParamsError(accepted, unknown))
		return
	}
	if name := repeatedParam(accepted, query); name != "" {
		fail(c, badRequest("Query parameter '%s' is given %d times; give it once", name, len(query[name])))
		return
	}
	c.Next()
}

// checkTexts applies the text rule to every name of values and its values
// (query parameters, multipart parts), in name order, answering the first
// that fails as a 400 naming it as what.
func checkTexts(what string, values map[string][]string) error {
	for _, key := range slices.Sorted(maps.Keys(values)) {
		for _, v := range append([]string{key}, values[key]...) {
			if problem := document.TextProblem(v); problem != "" {
				return badRequest("%s '%s' %s", what, key, problem)
			}
		}
	}
	return nil
}

// VersionHeader carries svcbridge's version on every response, so that
// any answer (an error too) says which server gave it.
const VersionHeader = "X-Svcbridge-Version"

// timestamp sets X-Timestamp (ms) on every response, as ioFog clients
// expect, and the version header.
func (s *Server) timestamp(c *gin.Context) {
	c.Header("X-Timestamp", strconv.FormatInt(time.Now().UnixMilli(), 10))
	c.Header(VersionHeader, buildinfo.Version())
	c.Next()
}

// readyz is ready when the store answers: that is all the API needs to
// serve. Temporal and whether a worker polls the task queue are reported
// but do not gate readiness: without it
// writes still succeed and the workers' resync starts their reconciles
// later, while taking every API replica out of its load balancer would
// also stop the agents' pull API.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	if err := s.Store.Ping(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, wire.Readiness{Status: "unavailable", Store: err.Error()})
		return
	}
	out := wire.Readiness{Status: "ready", Store: "ok", Temporal: "ok"}
	if s.Ready != nil {
		if err := s.Ready(ctx); err != nil {
			out.Temporal = "unreachable: " + err.Error()
		}
	}
	// Reported, not gating, as Temporal is: the API stores changes without
	// them, and the services say why they stay pending or failed.
	out.Worker, _, out.Pollers = s.workers(ctx)
	if s.Kubernetes != nil {
		out.Kubernetes = "ok"
		if err := s.Kubernetes(ctx); err != nil {
			out.Kubernetes = "unreachable: " + err.Error()
		}
	}
	c.JSON(http.StatusOK, out)
}

// Error is an API error: its status and the body's name and message
// (wire.Error).
type Error struct {
	Status        int
	Name, Message string
}

func (e *Error) Error() string { return e.Message }

func apiErr(status int, name, format string, args ...any) *Error {
	return &Error{Status: status, Name: name, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return apiErr(http.StatusBadRequest, "ValidationError", format, args...)
}

func notFound(format string, args ...any) *Error {
	return apiErr(http.StatusNotFound, "NotFoundError", format, args...)
}

func conflict(format string, args ...any) *Error {
	return apiErr(http.StatusConflict, "DuplicatePropertyError", format, args...)
}

// RetryAfter is the Retry-After (seconds) of a 503 for a database that is
// unavailable: InTx has already retried for about a second.
const RetryAfter = "2"

// fail answers with err: an *Error as it is, invalid input that a
// document reader or a rule refused (*document.Error) as 400, a database
// that stays unavailable as 503 with Retry-After, a request body the
// client stopped sending before HTTP_READ_TIMEOUT as 408 (the client's
// fault: not logged), the work of a client that hung up as 499, anything
// else as a 500 that does not leak internals.
// Handlers return the rules' errors as they are: this is the one place
// that maps them.
func fail(c *gin.Context, err error) {
	var e *Error
	var invalid *document.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		e = apiErr(http.StatusRequestTimeout, "RequestTimeoutError", "The request body was not received in time")
	case errors.As(err, &e):
	case errors.As(err, &invalid):
		e = badRequest("%s", invalid.Message)
	case clientGone(c):
		// What failed is the work the client stopped waiting for: no one
		// reads the answer, and the failure is the client's, not a 5xx.
		// (A request that was itself wrong, such as a body cut short,
		// still answers its 4xx above.)
		c.AbortWithStatus(StatusClientClosedRequest)
		return
	case errors.Is(err, store.ErrUnavailable):
		slog.Default().WarnContext(c.Request.Context(), "database unavailable", "request_id", c.GetString(RequestIDHeader),
			"method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
		c.Header("Retry-After", RetryAfter)
		e = apiErr(http.StatusServiceUnavailable, "UnavailableError", "The database is unavailable; try again later")
	default:
		slog.Default().ErrorContext(c.Request.Context(), "request failed", "request_id", c.GetString(RequestIDHeader),
			"method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
		e = apiErr(http.StatusInternalServerError, "InternalError", "internal error; see the server log")
	}
	c.AbortWithStatusJSON(e.Status, wire.Error{Name: e.Name, Message: e.Message})
}

// jsonDocument reads a JSON body and decodes it with parse; when either
// fails it has answered the error and reports false.
func jsonDocument[T any](c *gin.Context, parse func([]byte) (T, error)) (T, bool) {
	return readDocument(c, func() ([]byte, error) { return readBody(c, "application/json") }, parse)
}

// yamlUpload reads the YAML file of a multipart field and decodes it with
// parse, as jsonDocument does.
func yamlUpload[T any](c *gin.Context, field string, parse func([]byte) (T, error)) (T, bool) {
	return readDocument(c, func() ([]byte, error) { return readUpload(c, field) }, parse)
}

func readDocument[T any](c *gin.Context, read func() ([]byte, error), parse func([]byte) (T, error)) (T, bool) {
	body, err := read()
	var v T
	if err == nil {
		v, err = parse(body)
	}
	if err != nil {
		fail(c, err)
		return v, false
	}
	return v, true
}

// readBody reads a request body of the given media type, at most MaxBody
// bytes.
func readBody(c *gin.Context, mediaType string) ([]byte, error) {
	ct, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || ct != mediaType {
		return nil, badRequest("Content-Type must be %s", mediaType)
	}
	if err := limitBody(c, bodyLimit(c)); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, bodyReadError(err)
	}
	return body, nil
}

// noBody reads the body of a write that takes none before the write is
// done: a body that cannot be read (a malformed chunked encoding, one
// over MaxBody, one not sent in time) is the client's error, answered as
// such, rather than a write done and the connection then dropped.
func noBody(c *gin.Context) {
	err := limitBody(c, MaxBody)
	if err == nil {
		if _, err = io.Copy(io.Discard, c.Request.Body); err != nil {
			err = bodyReadError(err)
		}
	}
	if err != nil {
		fail(c, err)
	}
}

// limitBody refuses a body announced larger than the route's limit
// (bodyLimit) before reading a byte of it, and cuts an unannounced one
// (chunked) at that limit.
func limitBody(c *gin.Context, limit int64) error {
	if c.Request.ContentLength > limit {
		return tooLarge(limit)
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	return nil
}

// bodyLimitKey is where a route sets its own limit (withBodyLimit).
const bodyLimitKey = "svcbridge.bodyLimit"

// withBodyLimit sets the limit of a group's or a route's bodies.
func withBodyLimit(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(bodyLimitKey, limit) }
}

// bodyLimit is the most a request's route reads: MaxBody unless the route
// says otherwise.
func bodyLimit(c *gin.Context) int64 {
	if v, ok := c.Get(bodyLimitKey); ok {
		return v.(int64)
	}
	return MaxBody
}

func tooLarge(limit int64) *Error {
	return apiErr(http.StatusRequestEntityTooLarge, "PayloadTooLargeError", "Request body is larger than %d bytes", limit)
}

// bodyReadError is the answer to a body that could not be read: too
// large, not sent within the read timeout, or cut short by the client (a
// Content-Length it did not send): the client's error, not the server's.
func bodyReadError(err error) error {
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &big):
		return tooLarge(big.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return err // fail answers 408: the client took too long
	}
	return badRequest("Request body could not be read: %v", err)
}

// readUpload reads the one file of a multipart/form-data upload in field:
// a second one there is refused rather than ignored, and every part's
// name, value and file name passes the text rule.
func readUpload(c *gin.Context, field string) ([]byte, error) {
	ct, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || ct != "multipart/form-data" {
		return nil, badRequest("Content-Type must be multipart/form-data with the document in field '%s'", field)
	}
	if err := limitBody(c, MaxYAMLBody); err != nil {
		return nil, err
	}
	if err := c.Request.ParseMultipartForm(MaxYAMLBody); err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, bodyReadError(err)
		}
		return nil, badRequest("Invalid multipart form: %v", err)
	}
	form := c.Request.MultipartForm
	if err := checkTexts("Multipart part", form.Value); err != nil {
		return nil, err
	}
	names := make(map[string][]string, len(form.File))
	for key, files := range form.File {
		for _, fh := range files {
			names[key] = append(names[key], fh.Filename)
		}
	}
	if err := checkTexts("Multipart part", names); err != nil {
		return nil, err
	}
	switch files := form.File[field]; len(files) {
	case 0:
		return nil, badRequest("Missing file in multipart field '%s'", field)
	case 1:
	default:
		return nil, badRequest("Multipart field '%s' holds %d files: send exactly one", field, len(files))
	}
	f, err := form.File[field][0].Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	body, err := io.ReadAll(f)
	if err != nil {
		return nil, bodyReadError(err)
	}
	return body, nil
}

// inTx runs fn in a store transaction; a dry run's is rolled back once
// fn succeeded (see dryRun).
func (s *Server) inTx(c *gin.Context, fn func(*store.Tx) error) error {
	ctx := c.Request.Context()
	if !isDryRun(ctx) {
		return s.Store.InTx(ctx, fn)
	}
	err := s.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errDryRun
	})
	if errors.Is(err, errDryRun) {
		return nil
	}
	return err
}

// readTx runs fn on one snapshot of the store that never waits for the
// writers (store.Read): every answer that only reads.
func (s *Server) readTx(c *gin.Context, fn func(*store.Tx) error) error {
	return s.Store.Read(c.Request.Context(), fn)
}

// txValue runs fn in a read transaction (readTx) and returns what it
// read. fn takes its arguments in the order of a *store.Tx method's, so
// that a method expression ((*store.Tx).ListAgents) serves as is.
func txValue[T any](s *Server, c *gin.Context, fn func(*store.Tx, context.Context) (T, error)) (T, error) {
	var v T
	err := s.readTx(c, func(tx *store.Tx) error {
		var err error
		v, err = fn(tx, c.Request.Context())
		return err
	})
	return v, err
}

// read is txValue for a handler: when fn fails it has answered the error
// and reports false.
func read[T any](s *Server, c *gin.Context, fn func(*store.Tx, context.Context) (T, error)) (T, bool) {
	v, err := txValue(s, c, fn)
	if err != nil {
		fail(c, err)
		return v, false
	}
	return v, true
}

// afterCommit runs the reconcile trigger; a failure is logged, not
// returned: the change is stored and the worker's resync will converge it.
func (s *Server) afterCommit(c *gin.Context, what string, err error) {
	if err != nil {
		s.requestLogger(c).WarnContext(c.Request.Context(), "could not start reconcile; the worker's resync will", "what", what, "error", err)
	}
}
