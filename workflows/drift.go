package workflows

import (
	"time"

	"svcbridge/reconcile"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// DriftWorkflowName names the periodic drift check's workflow type.
const DriftWorkflowName = "DriftWorkflow"

// maxDriftPages bounds one run's history before it continues as new.
const maxDriftPages = 200

// DriftWorkflow re-reconciles every router, page by page, repairing what
// was changed outside svcbridge; on the Kubernetes control plane it then
// does the same for the hub ConfigMap and the Kubernetes Services. A
// Temporal Schedule starts it.
func DriftWorkflow(ctx workflow.Context, at reconcile.DriftCursor) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	for pages := 1; ; pages++ {
		if pages == maxDriftPages {
			return workflow.NewContinueAsNewError(ctx, DriftWorkflowName, at)
		}
		check := reconcile.ActivityDriftCheck
		if at.Kube {
			check = reconcile.ActivityDriftCheckKube
		}
		if err := workflow.ExecuteActivity(actx, check, at.After).Get(ctx, &at.After); err != nil {
			return err
		}
		if at.After == "" {
			if at.Kube || at.AgentsOnly {
				return nil
			}
			at.Kube = true
		}
	}
}
