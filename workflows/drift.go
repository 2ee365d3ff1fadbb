package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
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
			if at.Kube {
				return nil
			}
			at.Kube = true
		}
	}
}

// DriftCursor is where a drift check goes on: the agent routers after
// After, or, with Kube, the services after After.
type DriftCursor struct {
	Kube  bool
	After string
}

// EnsureDriftSchedule creates the schedule that runs DriftWorkflow every
// interval, or updates its interval; interval 0 deletes it. Every worker
// calls it at start: the schedule ID makes that idempotent.
func EnsureDriftSchedule(ctx context.Context, c client.Client, ids IDs, taskQueue string, interval time.Duration) error {
	id := ids.DriftSchedule()
	h := c.ScheduleClient().GetHandle(ctx, id)
	if interval == 0 {
		err := h.Delete(ctx)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    spec,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID: id, Workflow: DriftWorkflowName, Args: []any{DriftCursor{}}, TaskQueue: taskQueue,
		},
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			in.Description.Schedule.Spec = &spec
			return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
		},
	})
}
