package store

import (
	"context"

	"svcbridge/service"
)

// RouterAgentsAfter pages through the agents with a router config, by
// uuid, for the drift check.
func (t *Tx) RouterAgentsAfter(ctx context.Context, after string, limit int) ([]string, error) {
	var uuids []string
	return uuids, t.sel(ctx, &uuids, t.routerAgentsPage(), after, limit)
}

// routerAgentsPage is RouterAgentsAfter's query (arguments after, limit).
func (t *Tx) routerAgentsPage() string {
	return `SELECT agent_uuid FROM router_configs WHERE ` + t.binary("agent_uuid") + ` > ? ORDER BY ` + t.binary("agent_uuid") + ` LIMIT ?`
}

// readServicesAfter is ServicesAfter without the cache.
func (t *Tx) readServicesAfter(ctx context.Context, after string, limit int) ([]service.Service, error) {
	size := limit
	if limit <= 0 {
		// Counted first, to size the list: append would allocate five
		// times a list of 10,000 as it grows. (A hint: a row added since
		// the count only grows the list.)
		if err := t.get(ctx, &size, `SELECT COUNT(*) FROM services WHERE `+t.binary("name")+` > ?`, after); err != nil {
			return nil, err
		}
	}
	query, args := t.servicesPage(after, limit)
	return t.services(ctx, size, query, args...)
}

// servicesPage is ServicesAfter's query of the services themselves.
func (t *Tx) servicesPage(after string, limit int) (string, []any) {
	page, args := t.namedAfter("name", after, limit)
	return `SELECT ` + serviceCols + ` FROM services WHERE ` + page, args
}
