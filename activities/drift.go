package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"svcbridge/metrics"
	"svcbridge/store"
)

// DriftPage is how many routers one DriftCheck activity looks at.
const DriftPage = 200

// DriftCheck reconciles the routers of a page of agents (uuids after
// after) and returns the last uuid it checked, "" when the page was the
// last. Nothing in svcbridge's state changed to cause these reconciles, so
// any rewrite repairs a config someone else changed: each is counted and
// logged with what differed.
func (a *Activities) DriftCheck(ctx context.Context, after string) (string, error) {
	var uuids []string
	err := a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		uuids, err = tx.RouterAgentsAfter(ctx, after, DriftPage)
		return err
	})
	if err != nil {
		return "", err
	}
	log := activity.GetLogger(ctx)
	for i, u := range uuids {
		changes, err := a.reconcileAgent(ctx, u)
		if err != nil {
			return "", err
		}
		if changes != nil {
			metrics.Repairs.WithLabelValues("agent").Inc()
			log.Warn("repaired a router config changed outside svcbridge", "agent", u, "changes", changes)
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if len(uuids) < DriftPage {
		return "", nil
	}
	return uuids[len(uuids)-1], nil
}
