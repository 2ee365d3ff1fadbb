// Package workflows orchestrates provisioning with Temporal: one entity
// workflow per Service, and one workflow draining the queue of agent
// routers to rebuild through a child workflow per batch of agents.
// Workflows only decide the order of things; every read and write is an
// activity. The order of a service's reconcile pass is package pass's;
// calls on the Temporal client (start, signal, schedule) are package
// temporalclient's.
package workflows

import (
	"cmp"
	"strconv"
	"time"

	"svcbridge/reconcile"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names shared by the API (which starts and signals) and the worker.
const (
	ServiceWorkflowName    = "ServiceWorkflow"
	AgentQueueWorkflowName = "AgentQueueWorkflow"
	AgentBatchWorkflowName = "AgentBatchWorkflow"
	// SignalReconcile says "something changed; reconcile". The workflow
	// re-reads the current state; the only data is who sent it: svcbridge
	// sends SignalFromSvcbridge, and a signal without it (the Web UI's Send
	// a Signal, temporal workflow signal) is a person's reconcile request,
	// which the service workflow records as the API records its own.
	SignalReconcile     = "reconcile"
	SignalFromSvcbridge = "svcbridge"
	// QueryState answers what the service workflow is doing.
	QueryState = "state"
	// SearchAttributeService carries the service name, so the Web UI can
	// list every run for one service.
	SearchAttributeService = "ServiceName"
	// SearchAttributeStatus carries the service's provisioningStatus as of
	// the workflow's last pass: the Web UI lists failed services with
	// ProvisioningStatus="failed".
	SearchAttributeStatus = "ProvisioningStatus"
	// MemoFailingSince and MemoFailedAttempts are in a failing service
	// workflow's memo: since when its passes fail (RFC 3339, UTC) and how
	// many failed in a row.
	MemoFailingSince   = "failingSince"
	MemoFailedAttempts = "failedAttempts"
)

// Register registers every workflow type under its name on a worker, or
// on a replayer, with timing t (the zero value: production's).
func Register(r interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}, t Timing) {
	t = t.withDefaults()
	r.RegisterWorkflowWithOptions(t.ServiceWorkflow, workflow.RegisterOptions{Name: ServiceWorkflowName})
	r.RegisterWorkflowWithOptions(t.AgentQueueWorkflow, workflow.RegisterOptions{Name: AgentQueueWorkflowName})
	r.RegisterWorkflowWithOptions(AgentBatchWorkflow, workflow.RegisterOptions{Name: AgentBatchWorkflowName})
	r.RegisterWorkflowWithOptions(DriftWorkflow, workflow.RegisterOptions{Name: DriftWorkflowName})
}

// SearchAttributes are the Keyword attributes the namespace must have.
var SearchAttributes = []string{SearchAttributeService, SearchAttributeStatus}

// ServiceKey and StatusKey set those attributes: a service's workflow
// starts with both, and its passes upsert the status.
var (
	ServiceKey = temporal.NewSearchAttributeKeyKeyword(SearchAttributeService)
	StatusKey  = temporal.NewSearchAttributeKeyKeyword(SearchAttributeStatus)
)

// IDs names one installation's workflows and schedule: every ID starts
// with Prefix, so installations that share a namespace (each with its own
// prefix and task queue) never touch each other's.
type IDs struct {
	Prefix string
}

// Service is the workflow ID of a service's entity workflow.
func (i IDs) Service(name string) string { return i.Prefix + "service/" + name }

// AgentQueue is the ID of the one workflow draining the agent queue.
func (i IDs) AgentQueue() string { return i.Prefix + "agents/queue" }

// DriftSchedule is the ID of the drift check's schedule.
func (i IDs) DriftSchedule() string { return i.Prefix + "drift-check" }

// agentBatch is the ID of the queue's child workflow number n; the queue
// workflow carries n across continue-as-new, so IDs stay unique.
func agentBatch(queueID string, n int) string { return queueID + "/batch-" + strconv.Itoa(n) }

// Timing is the workflows' timing. A test shortens it; anything else takes
// the zero value, production's. Its waits are timers in the histories, so
// a replay must take the timing the history was made with.
type Timing struct {
	// RetryBackoff is the wait after a failed reconcile, doubling to
	// MaxRetryBackoff; a signal (POST .../reconcile) cuts it short.
	RetryBackoff, MaxRetryBackoff time.Duration
	// MaxIterations bounds one run's history; then it continues as new.
	MaxIterations int
}

func (t Timing) withDefaults() Timing {
	t.RetryBackoff = cmp.Or(t.RetryBackoff, 2*time.Second)
	t.MaxRetryBackoff = cmp.Or(t.MaxRetryBackoff, 5*time.Minute)
	t.MaxIterations = cmp.Or(t.MaxIterations, 500)
	return t
}

// ServiceState is the answer to QueryState.
type ServiceState struct {
	Service    string                  `json:"service"`
	Step       string                  `json:"step"`
	LastError  string                  `json:"lastError,omitempty"`
	Reconciles int                     `json:"reconciles"`
	Failing    reconcile.FailureStreak `json:"failing,omitzero"`
}
