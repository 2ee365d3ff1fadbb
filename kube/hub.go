package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"svcbridge/routerconfig"
)

// The hub router's config on a Kubernetes control plane (seed 000, "Where
// each object is stored").
const (
	HubConfigMapName = "iofog-router"
	HubConfigKey     = routerconfig.HubFileName
)

// NoHubConfigMapError is returned by UpdateHub when the hub router's
// ConfigMap does not exist: the hub router is not deployed (or not yet).
// svcbridge does not create it; the router's deployment owns it.
type NoHubConfigMapError struct {
	Namespace string
}

func (e *NoHubConfigMapError) Error() string {
	return fmt.Sprintf("ConfigMap %s not found in namespace %s: the hub router's config must exist", HubConfigMapName, e.Namespace)
}

// UpdateHub applies edit to the hub file (ConfigMap iofog-router, key
// skrouterd.json, in cfg.Namespace) by compare-and-swap: it reads the
// ConfigMap, applies edit to the file (empty when the key is missing),
// and updates the ConfigMap at the resourceVersion it read; when another
// writer got there first it reads and applies again. Nothing is written
// when edit changes nothing but whitespace. An error from edit is returned
// as it is; a missing ConfigMap is *NoHubConfigMapError.
func UpdateHub(ctx context.Context, cs kubernetes.Interface, cfg Config, edit func(raw []byte) ([]byte, error)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	configMaps := cs.CoreV1().ConfigMaps(cfg.Namespace)
	return retryWrite(ctx, func() error {
		cm, err := configMaps.Get(ctx, HubConfigMapName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return &NoHubConfigMapError{Namespace: cfg.Namespace}
		}
		if err != nil {
			return fmt.Errorf("get ConfigMap %s/%s: %w", cfg.Namespace, HubConfigMapName, err)
		}
		raw := []byte(cm.Data[HubConfigKey])
		out, err := edit(raw)
		if err != nil {
			return err
		}
		if _, present := cm.Data[HubConfigKey]; present && routerconfig.SameHub(raw, out) {
			return nil
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[HubConfigKey] = string(out)
		_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{}) // carries the resourceVersion read
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err):
			return errRetry{fmt.Errorf("update ConfigMap %s/%s: it kept changing: %w", cfg.Namespace, HubConfigMapName, err)}
		case apierrors.IsNotFound(err):
			return &NoHubConfigMapError{Namespace: cfg.Namespace}
		default:
			return fmt.Errorf("update ConfigMap %s/%s: %w", cfg.Namespace, HubConfigMapName, err)
		}
	})
}
