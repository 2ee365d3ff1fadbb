// Package metrics holds svcbridge's Prometheus metrics, served at /metrics:
// HTTP traffic, provisioning outcomes and latency, router-config writes,
// Kubernetes API calls, fan-out sizes, and the Temporal SDK's own metrics.
package metrics

import (
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"svcbridge/buildinfo"
)

// Registry is every metric of this process.
var Registry = prometheus.NewRegistry()

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The version as a label, as Prometheus' own *_build_info: a query
	// joins it to any series of the process.
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "svcbridge", Name: "build_info",
		Help: "svcbridge's version (a release tag, or devel+<revision>) and Go version; always 1."}, []string{"version", "goversion"})
	info.WithLabelValues(buildinfo.Version(), runtime.Version()).Set(1)
	Registry.MustRegister(info)
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "svcbridge", Name: name, Help: help}, labels)
	Registry.MustRegister(c)
	return c
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "svcbridge", Name: name, Help: help, Buckets: buckets}, labels)
	Registry.MustRegister(h)
	return h
}

var (
	// HTTPRequests counts API requests by method, route template and status.
	HTTPRequests = counterVec("http_requests_total", "API requests by method, route and status code.", "method", "route", "code")
	// HTTPDuration is API latency by method and route template.
	HTTPDuration = histogramVec("http_request_duration_seconds", "API request latency.", prometheus.DefBuckets, "method", "route")
	// Reconciles counts finished service reconciles by outcome (ready, failed).
	Reconciles = counterVec("service_reconciles_total", "Finished service reconciles by outcome.", "outcome")
	// ReadyLatency is the time from a service change to its ready status.
	ReadyLatency = histogramVec("service_ready_seconds", "Time from a service create or update to ready.",
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
)

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
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
