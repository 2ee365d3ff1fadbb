// Package service holds the pure domain of svcbridge: the Service and its
// spec, validation, tag matching, Kubernetes annotations and the router
// objects a Service becomes. Nothing here does I/O.
package service

import (
	"strings"
	"time"
)

// Types of backend a Service can publish.
const (
	TypeMicroservice = "microservice"
	TypeAgent        = "agent"
	TypeK8s          = "k8s"
	TypeExternal     = "external"
)

// Types lists the valid values of Spec.Type, in the order error messages name them.
var Types = []string{TypeMicroservice, TypeK8s, TypeAgent, TypeExternal}

// K8sTypes lists the valid values of Spec.K8sType.
var K8sTypes = []string{"LoadBalancer", "ClusterIP", "NodePort"}

// DefaultBridge is the defaultBridge value meaning "the hub router".
const DefaultBridge = "default-router"

// WithDefaults is s as stored: an empty defaultBridge is the default
// router's.
func (s Spec) WithDefaults() Spec {
	if s.DefaultBridge == "" {
		s.DefaultBridge = DefaultBridge
	}
	return s
}

// Provisioning statuses.
const (
	StatusPending = "pending"
	StatusReady   = "ready"
	StatusFailed  = "failed"
	// StatusDeleting is shown, never stored: a deleted service whose
	// objects are still being removed.
	StatusDeleting = "deleting"
)

// ControlPlane is where svcbridge runs: it decides where the hub is (an
// agent's router, or the Kubernetes hub ConfigMap) and whether services
// get a Kubernetes Service.
type ControlPlane string

// Control planes.
const (
	ControlPlaneRemote     ControlPlane = "remote"
	ControlPlaneKubernetes ControlPlane = "kubernetes"
)

// Kubernetes reports whether this is the Kubernetes control plane, in any
// case, as the configuration may spell it.
func (c ControlPlane) Kubernetes() bool {
	return strings.EqualFold(string(c), string(ControlPlaneKubernetes))
}

// Spec is what a client declares. Pointers distinguish "absent" from a zero
// value, which a partial JSON PATCH needs.
type Spec struct {
	Name          string   `json:"name"`
	Tags          []string `json:"tags"`
	Type          string   `json:"type"`
	Resource      string   `json:"resource"`
	TargetPort    int      `json:"targetPort"`
	DefaultBridge string   `json:"defaultBridge"`
	// Absent, not null, when unset (as the reference answers), so a GET
	// answer sent back is not a type error.
	ServicePort *int    `json:"servicePort,omitempty"`
	K8sType     *string `json:"k8sType,omitempty"`
	// Kubernetes is spec.kubernetes, nil when absent.
	Kubernetes *Kubernetes `json:"kubernetes"`
}

// Service is a stored Service with what svcbridge assigned to it.
type Service struct {
	Spec
	BridgePort         int     `json:"bridgePort"`
	ServiceEndpoint    *string `json:"serviceEndpoint"`
	ProvisioningStatus string  `json:"provisioningStatus"`
	ProvisioningError  *string `json:"provisioningError"`
	// Generation counts changes of the spec; ObservedGeneration is the
	// generation the last finished reconcile applied.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	// ReconcileRequest counts the reconciles asked for through the API:
	// POST .../reconcile, and changes of the agents and microservices the
	// service depends on. ObservedReconcileRequest is the count the last
	// finished reconcile read when it began.
	ReconcileRequest         int64     `json:"reconcileRequest"`
	ObservedReconcileRequest int64     `json:"observedReconcileRequest"`
	CreatedAt                time.Time `json:"createdAt"`
	UpdatedAt                time.Time `json:"updatedAt"`
	// RequestedAt is when the service was last created, updated or asked
	// to reconcile.
	RequestedAt time.Time `json:"-"`
	// Placement is where its objects go, as Place last decided it.
	Placement Placement `json:"-"`
	// Version is the row's version as a list in a read transaction read
	// it (store.Tx.ServicesAfter): it changes with every write of the row,
	// its tags included. 0 where the read did not learn it.
	Version int64 `json:"-"`
}

// AnsweredRequest is when the request that a reconcile pass beginning now
// answers was made, and whether it answers one: a spec or a reconcile
// request (an agent or microservice change is one) no finished pass has
// seen, or a service not ready yet. A pass over a ready service that has
// seen both (a resync, a drift check) answers none: the time to ready is
// not its to measure.
func (s *Service) AnsweredRequest() (time.Time, bool) {
	if s.ProvisioningStatus == StatusReady && s.Generation == s.ObservedGeneration &&
		s.ReconcileRequest == s.ObservedReconcileRequest {
		return time.Time{}, false
	}
	return s.RequestedAt, true
}
