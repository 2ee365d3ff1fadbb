package store

import (
	"context"

	"svcbridge/service"
)

// RouterAgentsAfter pages through the agents with a router config, by
// uuid, for the drift check.
func (t *Tx) RouterAgentsAfter(ctx context.Context, after string, limit int) ([]string, error) {
	var uuids []string
	return uuids, t.sel(ctx, &uuids, `SELECT agent_uuid FROM router_configs WHERE `+t.binary("agent_uuid")+` > ? ORDER BY `+t.binary("agent_uuid")+` LIMIT ?`, after, limit)
}

// ServicesAfter pages through the services by name (byte order): up to
// limit (0: all) of them named after after.
func (t *Tx) ServicesAfter(ctx context.Context, after string, limit int) ([]service.Service, error) {
	page, args := t.namedAfter("name", after, limit)
	rows, err := t.serviceRows(ctx, `SELECT `+serviceCols+` FROM services WHERE `+page, args...)
	if err != nil {
		return nil, err
	}
	return t.withTags(ctx, rows)
}
