package reconcile

import "time"

// The workflows' inputs.

// ServiceInput is the service workflow's input.
type ServiceInput struct {
	Name string
	// Failing is the failure streak a run continued as new carries on.
	Failing FailureStreak `json:",omitzero"`
}

// FailureStreak is how long a service's passes have failed in a row: since
// when (the end of the first failed pass) and how many. A reconcile signal
// does not end it, only a pass that succeeds.
type FailureStreak struct {
	Since    time.Time `json:"since,omitzero"`
	Attempts int       `json:"attempts,omitzero"`
}

// AgentQueueInput is the agent queue workflow's input.
type AgentQueueInput struct {
	// NextBatch numbers the next child workflow.
	NextBatch int
}

// AgentBatchInput is a batch child workflow's input.
type AgentBatchInput struct {
	Limit int
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

// The activities' results beside the pass's (Plan, Outcome).

// KubeResult is what the Kubernetes step found.
type KubeResult struct {
	// Endpoint is the LoadBalancer ingress (ip, else hostname); nil for
	// other types and when there is no Kubernetes Service.
	Endpoint *string
}

// AgentBatch is what one DrainAgents did, as the Web UI shows it.
type AgentBatch struct {
	Claimed int
	// Names are the first few reconciled agents' names.
	Names []string
	// Services counts the distinct services on the routers reconciled.
	Services int
	// Failed are "agent: reason" of the agents whose write failed; they
	// keep their mark and are claimed again after RetryFailedAgents.
	Failed []string
}

// QueueOutlook is what the agent queue holds for the workflow draining it:
// how many agents a batch could claim now, and when the earliest lease
// still held ends (zero when none is held).
type QueueOutlook struct {
	Claimable int
	NextLease time.Time
}
