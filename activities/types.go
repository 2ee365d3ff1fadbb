package activities

import "time"

// ServicePlan is what PlanService found: where a service's objects go and
// which agents to reconcile.
type ServicePlan struct {
	Exists     bool
	Generation int64
	// ReconcileRequest is the service's reconcile request count when the
	// pass began.
	ReconcileRequest int64
	// RequestedAt is when the create, update or reconcile request this
	// pass answers was made; zero when it answers none.
	RequestedAt time.Time
	// Sites are the agents that hold (or held) the service's connector and
	// hub listener; the service workflow reconciles them itself.
	Sites []string
	// ConnectorSite and HubSite are where ready requires the objects.
	ConnectorSite string
	HubSite       string
	// Fanout are the other agents whose listeners may change: those its tags
	// select and those that listen now.
	Fanout []string
	// Endpoint is the hub router's host (remote control plane).
	Endpoint *string
	// Invalid explains why the service cannot be placed as it is; it is not
	// retried quickly since only an inventory change can fix it.
	Invalid string
	// Kubernetes is set on the Kubernetes control plane: the hub is the
	// ConfigMap, and most types get a Kubernetes Service.
	Kubernetes bool
}

// Finish is the outcome the service workflow records.
type Finish struct {
	Service          string
	Generation       int64
	ReconcileRequest int64
	ConnectorSite    string
	HubSite          string
	// Endpoint is stored on success (nil clears it); a failure keeps the
	// endpoint the service had.
	Endpoint *string
	// Error, when set, marks the service failed with this message.
	Error string
	// Since is when the request this pass answers was made, where the time
	// to ready counts from; zero when it answers none (or in passes begun
	// by a release before it was recorded).
	Since time.Time
}
