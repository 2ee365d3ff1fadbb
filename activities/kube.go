package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
)

// TypeNoIngress is the error type of a LoadBalancer without ingress yet: the
// service workflow marks the service failed and retries with backoff.
const TypeNoIngress = "NoIngress"

// KubeResult is what ReconcileKubeService found.
type KubeResult struct {
	// Endpoint is the LoadBalancer ingress (ip, else hostname); nil for
	// other types and when there is no Kubernetes Service.
	Endpoint *string
	// Changed reports that the Service had to be created or patched.
	Changed bool
}

// loadService returns the service, or ok false when it is deleted.
func (a *Activities) loadService(ctx context.Context, name string) (svc service.Service, ok bool, err error) {
	err = a.Store.InTx(ctx, func(tx *store.Tx) error {
		svc, err = tx.GetService(ctx, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return svc, false, nil
	}
	return svc, err == nil, err
}

// kubeCall counts a Kubernetes API call by its outcome.
func kubeCall(verb, resource string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	metrics.KubeCalls.WithLabelValues(verb, resource, result).Inc()
}

// ReconcileHubConfigMap makes the hub router's ConfigMap hold the
// service's listener (and, for k8s and external backends, its connector),
// or neither when the service is gone, by compare-and-swap. It reports
// whether the file changed.
func (a *Activities) ReconcileHubConfigMap(ctx context.Context, name string) (bool, error) {
	svc, exists, err := a.loadService(ctx, name)
	if err != nil {
		return false, err
	}
	var listeners []routerconfig.Listener
	var connectors []routerconfig.Connector
	removeListeners := []string{routerconfig.ListenerName(name)}
	removeConnectors := []string{routerconfig.ConnectorName(name)}
	if exists {
		listeners, removeListeners = []routerconfig.Listener{service.Listener(name, svc.BridgePort)}, nil
		if svc.Type == service.TypeK8s || svc.Type == service.TypeExternal {
			connectors = []routerconfig.Connector{service.Connector(name, svc.TargetPort,
				service.Backend{Type: svc.Type, Resource: svc.Resource})}
			removeConnectors = nil
		}
	}
	changed := false
	err = kube.UpdateHub(ctx, a.Kube, a.KubeConfig, func(raw []byte) ([]byte, error) {
		out, err := routerconfig.UpsertPairs(raw, listeners, connectors)
		if err == nil {
			out, err = routerconfig.RemovePairs(out, routerconfig.PairListener, removeListeners)
		}
		if err == nil {
			out, err = routerconfig.RemovePairs(out, routerconfig.PairConnector, removeConnectors)
		}
		changed = err == nil && !routerconfig.SameJSON(raw, out)
		return out, err
	})
	kubeCall("update", "configmaps", err)
	var noCM *kube.NoHubConfigMapError
	if errors.As(err, &noCM) {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), TypeInvalidPlacement, err)
	}
	if err != nil {
		return false, err
	}
	if changed {
		metrics.RouterWrites.WithLabelValues("hub-configmap").Inc()
	}
	return changed, nil
}

// ReconcileKubeService makes the Kubernetes Service of a microservice,
// agent or external service match it (create, or patch ours; a foreign
// Service of that name is refused), polls a LoadBalancer's ingress, and
// deletes ours when the service is gone.
func (a *Activities) ReconcileKubeService(ctx context.Context, name string) (KubeResult, error) {
	var res KubeResult
	svc, exists, err := a.loadService(ctx, name)
	if err != nil {
		return res, err
	}
	res.Changed, err = a.ensureKubeService(ctx, name, svc, exists)
	if err == nil && !exists {
		// The hub ConfigMap's pairs went first (reconcileKube): nothing of
		// the deleted service remains in the cluster.
		err = a.Store.InTx(ctx, func(tx *store.Tx) error { return tx.ClearDeletion(ctx, name) })
	}
	if err != nil || !exists || svc.Type == service.TypeK8s || *svc.K8sType != string(corev1.ServiceTypeLoadBalancer) {
		return res, err
	}
	activity.RecordHeartbeat(ctx, "polling load balancer ingress")
	endpoint, err := kube.PollLoadBalancer(ctx, a.Kube, a.KubeConfig, name)
	kubeCall("poll", "services", err)
	var noIngress *kube.NoIngressError
	if errors.As(err, &noIngress) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), TypeNoIngress, err)
	}
	if err != nil {
		return res, err
	}
	res.Endpoint = &endpoint
	return res, nil
}

// ensureKubeService creates, patches or deletes the Kubernetes Service of
// a service and reports whether it had to change anything.
func (a *Activities) ensureKubeService(ctx context.Context, name string, svc service.Service, exists bool) (bool, error) {
	if !exists || svc.Type == service.TypeK8s {
		err := kube.DeleteService(ctx, a.Kube, a.KubeConfig, name)
		kubeCall("delete", "services", err)
		return false, err
	}
	if svc.ServicePort == nil || svc.K8sType == nil {
		return false, temporal.NewNonRetryableApplicationError("servicePort and k8sType are required on the Kubernetes control plane", TypeInvalidPlacement, nil)
	}
	desired := kube.BuildService(a.KubeConfig, name, *svc.ServicePort, svc.BridgePort, *svc.K8sType, svc.Tags, svc.Kubernetes)
	cfg := a.KubeConfig.WithDefaults()
	live, gerr := a.Kube.CoreV1().Services(cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	kubeCall("get", "services", ignoreNotFound(gerr))
	changed := gerr != nil || !kube.UpToDate(live, desired)
	err := kube.EnsureService(ctx, a.Kube, a.KubeConfig, desired)
	kubeCall("ensure", "services", err)
	var foreign *kube.ErrForeignService
	if errors.As(err, &foreign) {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), TypeInvalidPlacement, err)
	}
	return changed && err == nil, err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
