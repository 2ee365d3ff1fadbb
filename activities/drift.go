package activities

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"

	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/service"
	"svcbridge/store"
)

// DriftPage is how many routers one DriftCheck activity looks at.
const DriftPage = 200

// DriftCheck reconciles the routers of a page of agents (uuids after
// after) and returns the last uuid it checked, "" when the page was the
// last. A rewrite that is not work a reconcile was about to do repairs a
// config someone else changed: each is counted and logged with what
// differed.
func (a *Activities) DriftCheck(ctx context.Context, after string) (string, error) {
	var uuids []string
	err := a.Store.Read(ctx, func(tx *store.Tx) (err error) {
		uuids, err = tx.RouterAgentsAfter(ctx, after, DriftPage)
		return err
	})
	if err != nil {
		return "", err
	}
	log := activity.GetLogger(ctx)
	for i, u := range uuids {
		res, err := a.passRouter(ctx, u, "", true)
		if err != nil {
			return "", err
		}
		switch {
		case res.Repair:
			metrics.Repairs.WithLabelValues("agent").Inc()
			log.Warn("repaired a router config changed outside svcbridge", "agent", u, "changes", res.Changes)
		case res.Changes != nil:
			log.Debug("did the work of reconciles under way", "agent", u, "changes", res.Changes)
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if len(uuids) < DriftPage {
		return "", nil
	}
	return uuids[len(uuids)-1], nil
}

// underWay reports whether a service's reconcile is still to finish.
func (a *Activities) underWay(ctx context.Context, name string) (bool, error) {
	var names []string
	err := a.Store.Read(ctx, func(tx *store.Tx) (err error) {
		names, err = tx.UnsettledAmong(ctx, []string{name})
		return err
	})
	return len(names) > 0, err
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
	err := a.Store.Read(ctx, func(tx *store.Tx) (err error) {
		svcs, err = tx.ServicesAfter(ctx, after, DriftPage)
		return err
	})
	if err != nil {
		return "", err
	}
	log := activity.GetLogger(ctx)
	// A change is a repair unless the service's own reconcile is under way
	// (a service being created has no Kubernetes Service yet).
	report := func(name string, repairs prometheus.Counter, msg string) error {
		underWay, err := a.underWay(ctx, name)
		if err != nil || underWay {
			return err
		}
		repairs.Inc()
		log.Warn(msg, "service", name)
		return nil
	}
	for i, listed := range svcs {
		// Read again: a service deleted since the page was read must not
		// get its objects back; its own pass removes them.
		svc, err := a.kubeService(ctx, listed.Name)
		if err != nil {
			return "", err
		}
		if svc == nil {
			continue
		}
		changed, err := a.writeHubPairs(ctx, service.PlanHubPairs(listed.Name, svc))
		if err == nil && changed {
			err = report(listed.Name, metrics.Repairs.WithLabelValues("hub-configmap"),
				"repaired the hub ConfigMap's pairs of a service, changed outside svcbridge")
		}
		if err != nil {
			return "", err
		}
		change, err := a.syncKubeService(ctx, listed.Name, svc)
		if err == nil && change.Action != kube.ServiceKeep {
			err = report(listed.Name, metrics.Repairs.WithLabelValues("kubernetes-service"),
				"repaired a Kubernetes Service changed or deleted outside svcbridge")
		}
		if err != nil {
			return "", err
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if len(svcs) < DriftPage {
		return "", nil
	}
	return svcs[len(svcs)-1].Name, nil
}
