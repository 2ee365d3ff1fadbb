package temporalclient

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svcbridge/reconcile"
	"svcbridge/workflows"
)

// EnsureDriftSchedule creates the schedule that runs DriftWorkflow every
// interval, or updates its interval and what it checks; interval 0
// deletes it. Every worker calls it at start: the schedule ID makes that
// idempotent. Off the Kubernetes control plane (kubernetes false) the
// check covers the agents' routers alone.
func EnsureDriftSchedule(ctx context.Context, c client.Client, ids workflows.IDs, taskQueue string, interval time.Duration, kubernetes bool) error {
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
	action := &client.ScheduleWorkflowAction{
		ID: id, Workflow: workflows.DriftWorkflowName, Args: []any{reconcile.DriftCursor{AgentsOnly: !kubernetes}}, TaskQueue: taskQueue,
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    spec,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action:  action,
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			in.Description.Schedule.Spec = &spec
			in.Description.Schedule.Action = action
			return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
		},
	})
}
