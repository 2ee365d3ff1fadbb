package routersync

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"svcbridge/routerconfig"
)

// ConfigMap is the source of the hub router on a Kubernetes control plane:
// the ConfigMap svcbridge writes the hub's bridges into (iofog-router, key
// skrouterd.json), watched through the kube-apiserver. The same file is
// the router's start-up configuration, mounted from the ConfigMap, so
// only its bridges are applied at run time.
type ConfigMap struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
}

// Wait returns the ConfigMap's file once its resourceVersion differs from
// version, watching from the version it last read.
func (c *ConfigMap) Wait(ctx context.Context, version string) (Desired, error) {
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	for {
		cm, err := cms.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return Desired{}, fmt.Errorf("read ConfigMap %s/%s: %w", c.Namespace, c.Name, err)
		}
		if cm.ResourceVersion != version {
			es, err := routerconfig.FileEntities([]byte(cm.Data[routerconfig.HubFileName]))
			if err != nil {
				return Desired{}, fmt.Errorf("ConfigMap %s/%s: %w", c.Namespace, c.Name, err)
			}
			return Desired{Version: cm.ResourceVersion, Entities: es, Types: HubTypes}, nil
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", c.Name).String(),
			ResourceVersion: cm.ResourceVersion,
		})
		if err != nil {
			return Desired{}, fmt.Errorf("watch ConfigMap %s/%s: %w", c.Namespace, c.Name, err)
		}
		err = c.waitEvent(ctx, w)
		w.Stop()
		if err != nil {
			return Desired{}, err
		}
	}
}

// waitEvent waits for the watch to say the ConfigMap changed, or to end
// (its timeout, a restarted apiserver): either way it is read again.
func (c *ConfigMap) waitEvent(ctx context.Context, w watch.Interface) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			switch {
			case !ok, ev.Type == watch.Added, ev.Type == watch.Modified:
				return nil
			case ev.Type == watch.Deleted:
				return fmt.Errorf("ConfigMap %s/%s was deleted; the router keeps what it holds", c.Namespace, c.Name)
			case ev.Type == watch.Error:
				return fmt.Errorf("watch ConfigMap %s/%s: %v", c.Namespace, c.Name, ev.Object)
			}
		}
	}
}

// Report logs nothing more: on Kubernetes, what the hub router holds is
// the sync's log and its router's own status.
func (c *ConfigMap) Report(context.Context, Report) error { return nil }
