// Package workflows orchestrates provisioning with Temporal: one entity
// workflow per Service, and one workflow draining the queue of agent
// routers to rebuild. Workflows only decide the
// order of things; every read and write is an activity.
package workflows

import (
	"time"
)

// Names shared by the API (which starts and signals) and the worker.
const (
	ServiceWorkflowName    = "ServiceWorkflow"
	AgentQueueWorkflowName = "AgentQueueWorkflow"
	// AgentQueueWorkflowID is the one workflow draining the agent queue.
	AgentQueueWorkflowID = "agents/queue"
	// SignalReconcile says "something changed; reconcile". It carries no
	// data: the workflow re-reads the current state.
	SignalReconcile = "reconcile"
	// QueryState answers what the service workflow is doing.
	QueryState = "state"
	// SearchAttributeService carries the service name, so the Web UI can
	// list every run for one service.
	SearchAttributeService = "ServiceName"
)

const servicePrefix = "service/"

// ServiceWorkflowID is the workflow ID of a service's entity workflow.
func ServiceWorkflowID(name string) string { return servicePrefix + name }

// Timing of the service workflow.
var (
	// retryBackoff is the wait after a failed reconcile, doubling to
	// maxRetryBackoff; a signal (POST .../reconcile) cuts it short.
	retryBackoff    = 2 * time.Second
	maxRetryBackoff = 5 * time.Minute
	// maxIterations bounds one run's history; then it continues as new.
	maxIterations = 500
)

// ServiceState is the answer to QueryState.
type ServiceState struct {
	Service    string `json:"service"`
	Step       string `json:"step"`
	LastError  string `json:"lastError,omitempty"`
	Reconciles int    `json:"reconciles"`
}
