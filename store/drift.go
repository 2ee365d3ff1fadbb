package store

import "context"

// RouterAgentsAfter pages through the agents with a router config, by
// uuid, for the drift check.
func (t *Tx) RouterAgentsAfter(ctx context.Context, after string, limit int) ([]string, error) {
	var uuids []string
	return uuids, t.sel(ctx, &uuids, `SELECT agent_uuid FROM router_configs WHERE agent_uuid > ? ORDER BY agent_uuid LIMIT ?`, after, limit)
}
