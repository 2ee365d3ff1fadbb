package reconcile

import "time"

// The activities, by the names histories record: the worker registers each
// under its name (activities.Activities.ByName), the workflows and the
// tests that stand in for them call them by it.
const (
	// The whole pass (Run) as one activity: the service workflow's fast
	// path, as a local activity, and its retries.
	ActivityReconcileService         = "ReconcileService"
	ActivityRecordSignalledReconcile = "RecordSignalledReconcile"
	// The pass's steps, each its own activity in runs of the service
	// workflow begun before ChangeOneLocalPass.
	ActivityPlanService     = "PlanService"
	ActivityReconcileAgents = "ReconcileAgents"
	ActivityReconcileKube   = "ReconcileKube"
	ActivityFinishService   = "FinishService"
	ActivityQueueFanout     = "QueueFanout"
	// QueueAgents queues the agents a plan recorded by an earlier build
	// listed (Plan.Fanout).
	ActivityQueueAgents = "QueueAgents"
	// The agent queue.
	ActivityAgentQueueOutlook = "AgentQueueOutlook"
	ActivityDrainAgents       = "DrainAgents"
	// The drift check.
	ActivityDriftCheck     = "DriftCheck"
	ActivityDriftCheckKube = "DriftCheckKube"
)

// Activities lists every activity name.
var Activities = []string{
	ActivityPlanService, ActivityReconcileAgents, ActivityReconcileKube, ActivityFinishService,
	ActivityQueueFanout, ActivityReconcileService, ActivityRecordSignalledReconcile, ActivityQueueAgents,
	ActivityAgentQueueOutlook, ActivityDrainAgents, ActivityDriftCheck, ActivityDriftCheckKube,
}

// Timing the workflows and the activities share.
const (
	// PassHeartbeat is the heartbeat timeout of the activities that run a
	// pass or its Kubernetes step.
	PassHeartbeat = 30 * time.Second
	// FanoutHeartbeat is the heartbeat timeout of the queue step: a dead
	// worker's fan-out is taken over elsewhere within seconds.
	FanoutHeartbeat = 15 * time.Second
	// RetryFailedAgents is the lease an agent whose router write failed
	// keeps before a batch claims it again.
	RetryFailedAgents = 5 * time.Second
)
