package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"svcbridge/metrics"
	"svcbridge/service"
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
		res, err := a.reconcileRouter(ctx, u, "")
		if err != nil {
			return "", err
		}
		if changes := res.Changes; changes != nil {
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

// DriftCheckKube does for the Kubernetes side what DriftCheck does for
// agent routers, on a page of services (names after after): the hub
// ConfigMap's pairs and the Kubernetes Service are made to match, and each
// repair is counted and logged. Off the Kubernetes control plane it has
// nothing to check.
func (a *Activities) DriftCheckKube(ctx context.Context, after string) (string, error) {
	if a.Kube == nil {
		return "", nil
	}
	var svcs []service.Service
	err := a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		svcs, err = tx.ServicesAfter(ctx, after, DriftPage)
		return err
	})
	if err != nil {
		return "", err
	}
	log := activity.GetLogger(ctx)
	for i, svc := range svcs {
		changed, err := a.ReconcileHubConfigMap(ctx, svc.Name)
		if err != nil {
			return "", err
		}
		if changed {
			metrics.Repairs.WithLabelValues("hub-configmap").Inc()
			log.Warn("repaired the hub ConfigMap's pairs of a service, changed outside svcbridge", "service", svc.Name)
		}
		if changed, err = a.ensureKubeService(ctx, svc.Name, svc, true); err != nil {
			return "", err
		}
		if changed {
			metrics.Repairs.WithLabelValues("kubernetes-service").Inc()
			log.Warn("repaired a Kubernetes Service changed or deleted outside svcbridge", "service", svc.Name)
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if len(svcs) < DriftPage {
		return "", nil
	}
	return svcs[len(svcs)-1].Name, nil
}
