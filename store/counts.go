package store

import (
	"context"

	"svcbridge/service"
)

// Counts is the state the metrics gauges show at scrape time.
type Counts struct {
	Ready    int `db:"ready"`
	Pending  int `db:"pending"`
	Failed   int `db:"failed"`
	Deleting int `db:"deleting"`
	// AgentsUnacknowledged counts the agents whose microserviceConfig flag
	// is raised: a router config change they have not acknowledged.
	AgentsUnacknowledged int `db:"agents_unacknowledged"`
	// OldestUnacknowledged is the smallest lastUpdated (ms since the epoch)
	// among those agents, 0 when there is none: the newest change of the
	// agent that has waited longest, so now minus it is how long that agent
	// has at least been behind.
	OldestUnacknowledged int64 `db:"oldest_unacknowledged"`
	// RoutersBehind counts the routers whose router side says they do
	// not hold their document (unreachable, a restart due), and
	// BridgesRefused the bridges routers refused or cannot serve.
	RoutersBehind  int `db:"routers_behind"`
	BridgesRefused int `db:"bridges_refused"`
}

// Counts reads the services by status, the agents behind on their router
// config and what the routers' router sides report in one statement, on the readers' pool: a scrape never
// queues behind the writers. Each table is read once, whatever it holds:
// a scrape costs one pass over the services and one over the fleet's
// change flags.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := s.reads.GetContext(ctx, &c, s.reads.Rebind(`SELECT s.ready, s.pending, s.failed,
		(SELECT COUNT(*) FROM (`+deletingNames+`) d) AS deleting,
		a.agents_unacknowledged, a.oldest_unacknowledged, r.routers_behind, r.bridges_refused
		FROM (SELECT COUNT(CASE WHEN provisioning_status = ? THEN 1 END) AS ready,
				COUNT(CASE WHEN provisioning_status = ? THEN 1 END) AS pending,
				COUNT(CASE WHEN provisioning_status = ? THEN 1 END) AS failed
			FROM services) s,
			(SELECT COUNT(*) AS agents_unacknowledged, COALESCE(MIN(last_updated), 0) AS oldest_unacknowledged
			FROM agent_changes WHERE microservice_config) a,
			(SELECT COUNT(CASE WHEN error <> '' THEN 1 END) AS routers_behind, COALESCE(SUM(failed_count), 0) AS bridges_refused
			FROM router_reports) r`),
		service.StatusReady, service.StatusPending, service.StatusFailed)
	return c, mapErr(err)
}
