package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// ensureService makes the Kubernetes Service desired exist as the
// service's reconcile does: created, or ours patched, or a foreign one
// refused.
func ensureService(ctx context.Context, cs kubernetes.Interface, cfg Config, desired *corev1.Service) error {
	_, err := SyncService(ctx, cs, cfg, desired.Name, func(live *corev1.Service) (ServiceChange, error) {
		return diffService(cfg, desired, live), nil
	})
	return err
}

// deleteService deletes the Kubernetes Service name when it is ours, as
// the reconcile of a deleted service does.
func deleteService(ctx context.Context, cs kubernetes.Interface, cfg Config, name string) error {
	_, err := SyncService(ctx, cs, cfg, name, func(live *corev1.Service) (ServiceChange, error) {
		return diffService(cfg, nil, live), nil
	})
	return err
}
