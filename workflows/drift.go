package workflows

import (
	"time"

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
func DriftWorkflow(ctx workflow.Context, at DriftCursor) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	for pages := 1; ; pages++ {
		if pages == maxDriftPages {
			return workflow.NewContinueAsNewError(ctx, DriftWorkflowName, at)
		}
		check := a.DriftCheck
		if at.Kube {
			check = a.DriftCheckKube
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

// DriftCursor is where a drift check goes on: the agent routers after
// After, or, with Kube, the services after After. AgentsOnly ends the
// check after the routers, off the Kubernetes control plane (the runs of
// schedules made before it was set check an empty Kubernetes side, and
// replay as they ran).
type DriftCursor struct {
	Kube       bool
	After      string
	AgentsOnly bool `json:",omitempty"`
}
