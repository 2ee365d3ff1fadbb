package workflows

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"

	"svcbridge/reconcile"
)

// stubActivities are stand-ins of every activity, by name and with the
// real one's signature, for the test environment: a test says what each
// returns with env.OnActivity; one it does not mock fails. The real
// activities run against these workflows in systemtest.
var stubActivities = map[string]any{
	reconcile.ActivityPlanService:     func(context.Context, string) (reconcile.Plan, error) { return reconcile.Plan{}, errNotMocked },
	reconcile.ActivityReconcileAgents: func(context.Context, string, []string) error { return errNotMocked },
	reconcile.ActivityReconcileKube: func(context.Context, string) (reconcile.KubeResult, error) {
		return reconcile.KubeResult{}, errNotMocked
	},
	reconcile.ActivityFinishService:            func(context.Context, reconcile.Finish) (string, error) { return "", errNotMocked },
	reconcile.ActivityQueueFanout:              func(context.Context, string) error { return errNotMocked },
	reconcile.ActivityReconcileService:         func(context.Context, string) (reconcile.Outcome, error) { return reconcile.Outcome{}, errNotMocked },
	reconcile.ActivityRecordSignalledReconcile: func(context.Context, string, int) error { return errNotMocked },
	reconcile.ActivityQueueAgents:              func(context.Context, []string) error { return errNotMocked },
	reconcile.ActivityAgentQueueOutlook: func(context.Context, int) (reconcile.QueueOutlook, error) {
		return reconcile.QueueOutlook{}, errNotMocked
	},
	reconcile.ActivityDrainAgents:    func(context.Context, int) (reconcile.AgentBatch, error) { return reconcile.AgentBatch{}, errNotMocked },
	reconcile.ActivityDriftCheck:     func(context.Context, string) (string, error) { return "", errNotMocked },
	reconcile.ActivityDriftCheckKube: func(context.Context, string) (string, error) { return "", errNotMocked },
}

var errNotMocked = errors.New("activity not mocked by the test")

func registerStubs(env interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}) {
	for name, fn := range stubActivities {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
