package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"

	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
)

// kubeService gathers what the Kubernetes decisions about a service need
// from the store, on a read snapshot: the service, nil when it is deleted.
func (a *Activities) kubeService(ctx context.Context, name string) (*service.Service, error) {
	var svc *service.Service
	err := a.Store.Read(ctx, func(tx *store.Tx) error {
		s, err := tx.GetService(ctx, name)
		if err == nil {
			svc = &s
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return svc, err
}

// kubeCall counts a Kubernetes API call by its outcome.
func kubeCall(verb, resource string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	metrics.KubeCalls.WithLabelValues(verb, resource, result).Inc()
}

// writeHubPairs writes pairs into the hub ConfigMap by compare-and-swap and
// reports whether the file changed.
func (a *Activities) writeHubPairs(ctx context.Context, pairs service.HubPairs) (bool, error) {
	changed := false
	err := kube.UpdateHub(ctx, a.Kube, a.KubeConfig, func(raw []byte) ([]byte, error) {
		out, err := pairs.Apply(raw)
		changed = err == nil && !routerconfig.SameJSON(raw, out)
		return out, err
	})
	kubeCall("update", "configmaps", err)
	var noCM *kube.NoHubConfigMapError
	if errors.As(err, &noCM) {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.TypeInvalidPlacement, err)
	}
	if err != nil {
		return false, err
	}
	if changed {
		metrics.RouterWrites.WithLabelValues("hub-configmap").Inc()
	}
	return changed, nil
}

// reconcileKubeService does what kube.PlanService decides for the
// Kubernetes Service of a microservice, agent or external service (create,
// patch ours, refuse a foreign one, delete ours when the service is gone)
// as loaded (nil when deleted), and polls a LoadBalancer's ingress.
func (a *Activities) reconcileKubeService(ctx context.Context, name string, svc *service.Service) (reconcile.KubeResult, error) {
	var res reconcile.KubeResult
	change, err := a.syncKubeService(ctx, name, svc)
	if err == nil && svc == nil {
		// The hub ConfigMap's pairs went first (reconcileKube): nothing of
		// the deleted service remains in the cluster.
		err = a.Store.InTx(ctx, func(tx *store.Tx) error { return tx.ClearDeletion(ctx, name) })
	}
	if err != nil || !change.PollIngress {
		return res, err
	}
	activity.RecordHeartbeat(ctx, "polling load balancer ingress")
	endpoint, err := kube.PollLoadBalancer(ctx, a.Kube, a.KubeConfig, name)
	kubeCall("poll", "services", err)
	var noIngress *kube.NoIngressError
	if errors.As(err, &noIngress) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.TypeNoIngress, err)
	}
	if err != nil {
		return res, err
	}
	res.Endpoint = &endpoint
	return res, nil
}

// syncKubeService makes the Kubernetes Service of service name (svc nil
// when deleted) what kube.PlanService decides from the live one, and
// returns the change made. A service that cannot have its Service fails
// as an invalid placement: only a change outside the service fixes it.
func (a *Activities) syncKubeService(ctx context.Context, name string, svc *service.Service) (kube.ServiceChange, error) {
	change, err := kube.SyncService(ctx, a.Kube, a.KubeConfig, name, func(live *corev1.Service) (kube.ServiceChange, error) {
		return kube.PlanService(a.KubeConfig, name, svc, live)
	})
	if change.Action == kube.ServiceDelete {
		kubeCall("delete", "services", err)
	} else {
		kubeCall("ensure", "services", err)
	}
	var foreign *kube.ErrForeignService
	if errors.As(err, &foreign) || errors.Is(err, kube.ErrIncompleteService) {
		return change, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.TypeInvalidPlacement, err)
	}
	return change, err
}
