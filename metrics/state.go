package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"svcbridge/service"
	"svcbridge/store"
)

// Sources of the scrape-time gauges.
const (
	sourceStore    = "store"
	sourceTemporal = "temporal"
)

// scrapeTimeout bounds each read, well inside Prometheus' default 10 s
// scrape timeout.
const scrapeTimeout = 3 * time.Second

var (
	servicesDesc = prometheus.NewDesc(Namespace+"_services",
		"Services by provisioning status (deleting: deleted, objects still on routers).", []string{"status"}, nil)
	unackedDesc = prometheus.NewDesc(Namespace+"_agents_unacknowledged",
		"Agents holding a router config change they have not acknowledged.", nil, nil)
	unackedAgeDesc = prometheus.NewDesc(Namespace+"_agents_unacknowledged_oldest_seconds",
		"How long the agent furthest behind has held an unacknowledged router config change at least (0: none).", nil, nil)
	routersBehindDesc = prometheus.NewDesc(Namespace+"_routers_behind",
		"Routers whose router side (svcbridge router-sync) last said they do not hold their document: unreachable, or a restart due.", nil, nil)
	bridgesRefusedDesc = prometheus.NewDesc(Namespace+"_router_bridges_refused",
		"Bridges (tcpListeners, tcpConnectors) that routers refused or cannot serve (a port taken on their host), as their router sides last reported.", nil, nil)
	pollersDesc = prometheus.NewDesc(Namespace+"_task_queue_pollers",
		"Workers that polled the task queue for workflow tasks within the last 2 minutes, as Temporal describes it.", []string{"task_queue"}, nil)
)

// Statuses are the values of svcbridge_services' status label; each has a
// series, 0 when no service has it.
var Statuses = []string{service.StatusReady, service.StatusPending, service.StatusFailed, service.StatusDeleting}

// Source is what the scrape-time gauges read.
type Source struct {
	// Store gives the services by status and the agents behind (*store.Store).
	Store interface {
		Counts(context.Context) (store.Counts, error)
	}
	// Pollers counts the workers polling TaskQueue (temporalclient.Client.Pollers);
	// nil leaves svcbridge_task_queue_pollers out.
	Pollers   func(context.Context) (int, error)
	TaskQueue string
}

// stateCollector reads its Source at every scrape: the gauges are what the
// store and Temporal say now, with no background loop to go stale. Each
// process that has a store exports them (api and worker alike), so
// dashboards and alerts take max() across instances.
type stateCollector struct{ src Source }

// Watch registers the gauges of src on Registry; stop unregisters them.
func Watch(src Source) (stop func()) {
	c := &stateCollector{src: src}
	Registry.MustRegister(c)
	return func() { Registry.Unregister(c) }
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- servicesDesc
	ch <- unackedDesc
	ch <- unackedAgeDesc
	ch <- routersBehindDesc
	ch <- bridgesRefusedDesc
	ch <- pollersDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if counts, err := c.src.Store.Counts(ctx); err != nil {
		ScrapeErrors.WithLabelValues(sourceStore).Inc()
	} else {
		for _, m := range stateMetrics(counts, time.Now()) {
			ch <- m
		}
	}
	if c.src.Pollers == nil {
		return
	}
	if n, err := c.src.Pollers(ctx); err != nil {
		ScrapeErrors.WithLabelValues(sourceTemporal).Inc()
	} else {
		ch <- prometheus.MustNewConstMetric(pollersDesc, prometheus.GaugeValue, float64(n), c.src.TaskQueue)
	}
}

// stateMetrics are the gauges of counts at now.
func stateMetrics(counts store.Counts, now time.Time) []prometheus.Metric {
	byStatus := map[string]int{service.StatusReady: counts.Ready, service.StatusPending: counts.Pending,
		service.StatusFailed: counts.Failed, service.StatusDeleting: counts.Deleting}
	var out []prometheus.Metric
	for _, s := range Statuses {
		out = append(out, prometheus.MustNewConstMetric(servicesDesc, prometheus.GaugeValue, float64(byStatus[s]), s))
	}
	out = append(out, prometheus.MustNewConstMetric(unackedDesc, prometheus.GaugeValue, float64(counts.AgentsUnacknowledged)),
		prometheus.MustNewConstMetric(routersBehindDesc, prometheus.GaugeValue, float64(counts.RoutersBehind)),
		prometheus.MustNewConstMetric(bridgesRefusedDesc, prometheus.GaugeValue, float64(counts.BridgesRefused)))
	return append(out, prometheus.MustNewConstMetric(unackedAgeDesc, prometheus.GaugeValue, UnacknowledgedAge(counts, now).Seconds()))
}

// UnacknowledgedAge is how long the agent furthest behind has held its
// newest unacknowledged change: 0 when no agent holds one, never negative
// (a writer's clock ahead of this one's).
func UnacknowledgedAge(counts store.Counts, now time.Time) time.Duration {
	if counts.AgentsUnacknowledged == 0 || counts.OldestUnacknowledged == 0 {
		return 0
	}
	return max(now.Sub(time.UnixMilli(counts.OldestUnacknowledged)), 0)
}
