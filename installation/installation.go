// Package installation wires the parts of one svcbridge installation: the
// API, the worker and what asks for reconciles are built here from the
// installation's identity (task queue, workflow ID prefix) and rules
// (control plane, tag prefix), for every role of the binary and for the
// system tests alike.
package installation

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"k8s.io/client-go/kubernetes"

	"svcbridge/activities"
	"svcbridge/api"
	"svcbridge/kube"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/trigger"
	"svcbridge/worker"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

// Installation is what every process of one installation shares.
type Installation struct {
	TaskQueue    string
	IDs          workflows.IDs
	ControlPlane service.ControlPlane
	Tags         service.TagRule
	// Kube is the cluster's settings on the Kubernetes control plane.
	Kube kube.Config
	// Timing is the workflows' (the zero value: production's).
	Timing workflows.Timing
}

// Workflows starts and signals the installation's workflows.
func (in Installation) Workflows(c client.Client) temporalclient.Client {
	return temporalclient.Client{Temporal: c, TaskQueue: in.TaskQueue, IDs: in.IDs}
}

// Trigger asks for reconciles: the API's Reconciler, the activities' Signaler.
func (in Installation) Trigger(c client.Client, st *store.Store) trigger.Trigger {
	return trigger.Trigger{Workflows: in.Workflows(c), Store: st}
}

// APIOptions are the API's options that come from the installation; the
// caller adds its authentication, limits and logger. cs reaches the cluster
// on the Kubernetes control plane (nil elsewhere), for /readyz.
func (in Installation) APIOptions(c client.Client, st *store.Store, cs kubernetes.Interface) api.Options {
	o := api.Options{Store: st, Reconciler: in.Trigger(c, st), IDs: in.IDs, ControlPlane: in.ControlPlane,
		Tags: in.Tags, Pollers: in.Workflows(c).Pollers, TaskQueue: in.TaskQueue}
	if cs != nil {
		o.Kubernetes = worker.KubeProbe(cs).Check
	}
	return o
}

// Worker is a worker with every workflow and activity registered; cs
// reaches the cluster on the Kubernetes control plane (nil elsewhere).
// onFatal, when not nil, hears of an error that stopped it for good.
func (in Installation) Worker(c client.Client, st *store.Store, cs kubernetes.Interface, onFatal func(error)) sdkworker.Worker {
	acts := &activities.Activities{Store: st, Tags: in.Tags, ControlPlane: in.ControlPlane,
		Signaler: in.Trigger(c, st), Kube: cs, KubeConfig: in.Kube}
	return worker.New(c, in.TaskQueue, acts, in.Timing, onFatal)
}
