// Package metrics holds svcbridge's Prometheus metrics, served at /metrics:
// HTTP traffic, provisioning outcomes and latency, router-config writes,
// Kubernetes API calls, fan-out sizes and durations, drift repairs, the
// services by status and the agents behind on their router config (read
// from the store at scrape time), the workers polling the task queue, the
// build, and the Temporal SDK's own metrics.
//
// Every counter and histogram has its series from the start, at zero, for
// each label value svcbridge records (Known): a dashboard or an alert on
// rate() or increase() sees "nothing happened" rather than "no data".
package metrics

import (
	"io"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"svcbridge/buildinfo"
	"svcbridge/service"
	"svcbridge/store"
)

// Namespace prefixes every svcbridge metric.
const Namespace = "svcbridge"

// Registry is every metric of this process.
var Registry = prometheus.NewRegistry()

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	Registry.MustRegister(c)
	return c
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	Registry.MustRegister(h)
	return h
}

// Label values svcbridge records, shared by the recording code's tests and
// Known.
const (
	RouterAgent        = "agent"
	RouterHubConfigMap = "hub-configmap"
	RouterKubeService  = "kubernetes-service"
)

var (
	// HTTPRequests counts API requests by method, route template and status.
	HTTPRequests = counterVec("http_requests_total", "API requests by method, route and status code.", "method", "route", "code")
	// HTTPDuration is API latency by method and route template.
	HTTPDuration = histogramVec("http_request_duration_seconds", "API request latency.", prometheus.DefBuckets, "method", "route")
	// Reconciles counts finished service reconciles by outcome (ready, failed).
	Reconciles = counterVec("service_reconciles_total", "Finished service reconciles by outcome.", "outcome")
	// ReadyLatency is the time from a service's create, update or reconcile
	// request to the ready status of the pass that answers it.
	ReadyLatency = histogramVec("service_ready_seconds", "Time from a service create, update or reconcile request to ready.",
		[]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}).WithLabelValues()
	// RouterWrites counts router config rewrites, by kind of router (agent, hub-configmap).
	RouterWrites = counterVec("router_config_writes_total", "Router config documents rewritten.", "router")
	// KubeCalls counts Kubernetes API calls by verb, resource and result.
	KubeCalls = counterVec("kubernetes_api_calls_total", "Kubernetes API calls by verb, resource and result (ok, error).", "verb", "resource", "result")
	// Repairs counts router configs found changed outside svcbridge and
	// rewritten by the drift check, by kind of router.
	Repairs = counterVec("drift_repairs_total", "Router configs found changed outside svcbridge and repaired.", "router")
	// Fanout is the number of agents one service change signals.
	Fanout = histogramVec("fanout_agents", "Agents signalled by one service reconcile.",
		[]float64{1, 10, 100, 500, 1000, 2000, 5000, 10000, 50000}).WithLabelValues()
	// FanoutBatch is the time one batch of the agent fan-out takes to
	// rebuild its agents' router configs (up to 250 agents).
	FanoutBatch = histogramVec("fanout_batch_seconds", "Time to rebuild the router configs of one batch of agents.",
		[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}).WithLabelValues()
	// ScrapeErrors counts the scrape-time reads (store, temporal) that
	// failed; their gauges are left out of that scrape.
	ScrapeErrors = counterVec("scrape_errors_total", "Scrape-time reads of the gauges that failed, by source.", "source")
)

// The store's statements and transactions, as this process sent them: a
// change's cost in database round trips (the bench divides them by the
// services it made).
func init() {
	Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "store_statements_total",
			Help: "SQL statements this process sent to its store."},
			func() float64 { n, _ := store.Sent(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "store_transactions_total",
			Help: "Transactions this process began on its store."},
			func() float64 { _, n := store.Sent(); return float64(n) }))
}

// Known lists, per counter or histogram vector, the label values
// svcbridge records, in the vector's label order. init creates each
// series at zero. HTTP requests are created per route by the API
// (InitRoute): their codes are open-ended, their routes are the API's.
var Known = map[*prometheus.MetricVec][][]string{
	Reconciles.MetricVec:   {{service.StatusReady}, {service.StatusFailed}},
	RouterWrites.MetricVec: {{RouterAgent}, {RouterHubConfigMap}},
	Repairs.MetricVec:      {{RouterAgent}, {RouterHubConfigMap}, {RouterKubeService}},
	// The calls activities/kube.go makes (kubeCall), each ok or error.
	KubeCalls.MetricVec: withResults(
		[]string{"get", "services"}, []string{"ensure", "services"}, []string{"delete", "services"},
		[]string{"poll", "services"}, []string{"update", "configmaps"}),
	ScrapeErrors.MetricVec: {{sourceStore}, {sourceTemporal}},
}

func withResults(calls ...[]string) [][]string {
	var out [][]string
	for _, c := range calls {
		out = append(out, append(c[:2:2], "ok"), append(c[:2:2], "error"))
	}
	return out
}

// methods are the HTTP methods that are their own method label; any other
// a client sends is "other": a label a client chooses must come from a
// closed set, or anyone could grow /metrics without bound.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// Method is the method label of a request's method.
func Method(m string) string {
	if slices.Contains(methods, m) {
		return m
	}
	return "other"
}

// InitRoute creates the latency series of one API route, so every route
// has one from the start.
func InitRoute(method, route string) {
	HTTPDuration.WithLabelValues(method, route)
}

// buildInfo is 1, labelled with what this binary is.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
	Help: "svcbridge's version and the Go version it was built with; always 1."}, []string{"version", "goversion"})

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo)
	buildInfo.WithLabelValues(buildinfo.Version(), runtime.Version()).Set(1)
	for vec, values := range Known {
		for _, lv := range values {
			if _, err := vec.GetMetricWithLabelValues(lv...); err != nil {
				panic("metrics: Known: " + err.Error())
			}
		}
	}
}

// Handler serves the registry in the Prometheus text format. A collector
// that fails leaves its metrics out and the rest is served.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry, ErrorHandling: promhttp.ContinueOnError})
}

// Temporal returns an SDK metrics handler that reports into Registry, and
// a closer that flushes it.
func Temporal() (client.MetricsHandler, io.Closer) {
	reporter := tallyprom.NewReporter(tallyprom.Options{Registerer: Registry})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &tallyprom.DefaultSanitizerOpts,
	}, time.Second)
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), closer
}
