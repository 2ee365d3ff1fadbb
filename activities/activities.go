// Package activities does svcbridge's I/O for the workflows, one file a
// job: a service's pass (plan.go, pass.go), agents' routers (routers.go),
// the agent queue (queue.go), Kubernetes (kube.go), the drift check
// (drift.go). Every activity is idempotent: it reads the current state and
// converges to it, so a retry or a repeat after a crash is harmless. Their
// names, inputs and results are package reconcile's.
package activities

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"svcbridge/kube"
	"svcbridge/reconcile"
	"svcbridge/service"
	"svcbridge/store"
)

// Signaler queues agent reconciles (trigger.Trigger in production).
type Signaler interface {
	AgentsChanged(ctx context.Context, uuids ...string) error
}

// Activities holds what the activities need.
type Activities struct {
	Store        *store.Store
	Tags         service.TagRule
	ControlPlane service.ControlPlane
	Signaler     Signaler
	// Kube and KubeConfig reach the cluster on the Kubernetes control
	// plane; nil on the remote one.
	Kube       kubernetes.Interface
	KubeConfig kube.Config
}

// ByName is every activity under the name histories record it by, for the
// worker to register.
func (a *Activities) ByName() map[string]any {
	return map[string]any{
		reconcile.ActivityPlanService:              a.PlanService,
		reconcile.ActivityReconcileAgents:          a.ReconcileAgents,
		reconcile.ActivityReconcileKube:            a.ReconcileKube,
		reconcile.ActivityFinishService:            a.FinishService,
		reconcile.ActivityQueueFanout:              a.QueueFanout,
		reconcile.ActivityReconcileService:         a.ReconcileService,
		reconcile.ActivityRecordSignalledReconcile: a.RecordSignalledReconcile,
		reconcile.ActivityQueueAgents:              a.QueueAgents,
		reconcile.ActivityAgentQueueOutlook:        a.AgentQueueOutlook,
		reconcile.ActivityDrainAgents:              a.DrainAgents,
		reconcile.ActivityDriftCheck:               a.DriftCheck,
		reconcile.ActivityDriftCheckKube:           a.DriftCheckKube,
	}
}
