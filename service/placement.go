package service

import (
	"slices"

	"svcbridge/inventory"
)

// PlacementInput is what decides where a service's objects go.
type PlacementInput struct {
	// Service is the service; its DefaultBridge is the bridge agent's
	// uuid, or the reference as the client gave it when no agent answers
	// to it. Errors name the bridge agent by its name, and quote the
	// reference only when no agent answers to it.
	Service      Service
	ControlPlane ControlPlane
	// Backend is the agent running the microservice, or the agent itself;
	// nil for k8s and external, and when it no longer exists.
	Backend *inventory.Agent
	// DefaultRouter is the hub agent of the remote control plane, nil if none.
	DefaultRouter *inventory.Agent
	// Bridge is the defaultBridge agent when it is not default-router; nil
	// when it does not exist.
	Bridge *inventory.Agent
}

// AgentName is the name of the agent uuid among in's agents, else uuid.
func (in PlacementInput) AgentName(uuid string) string {
	for _, a := range []*inventory.Agent{in.Backend, in.DefaultRouter, in.Bridge} {
		if a != nil && a.UUID == uuid {
			return a.Name
		}
	}
	return uuid
}

// Placement is where a service's objects go and what that depends on. It
// is stored with the service: the routers' SQL only looks it up.
type Placement struct {
	// ConnectorSite and HubSite are the agents (by uuid) whose routers
	// hold the service's connector and hub listener; empty when no agent's
	// router does: the hub ConfigMap holds it (HubConfigMap), or nothing
	// does (the placement is invalid).
	ConnectorSite string
	HubSite       string
	// HubConfigMap says the hub listener is in the Kubernetes hub
	// ConfigMap (with the connector of a k8s or external service, which
	// has no ConnectorSite). Place sets it; the service's row does not
	// store it, since every placed service of a Kubernetes control plane
	// has it.
	HubConfigMap bool
	// Endpoint is where clients reach the hub: its host on the remote
	// control plane; nil where Kubernetes decides.
	Endpoint *string
	// BackendAgent and BridgeAgent are the agents (by uuid) whose changes
	// can move or invalidate the placement, and OnDefaultRouter says it
	// follows whichever agent is the default router. They are set even
	// when Place fails, so an agent change that mends it finds the service.
	BackendAgent    string
	BridgeAgent     string
	OnDefaultRouter bool
}

// SameSites reports whether p and q put a service's objects on the same
// agents and follow the same ones: all of a placement that the service's
// row stores (the Endpoint is the service's own field; HubConfigMap
// follows from the control plane).
func (p Placement) SameSites(q Placement) bool {
	return p.ConnectorSite == q.ConnectorSite && p.HubSite == q.HubSite &&
		p.BackendAgent == q.BackendAgent && p.BridgeAgent == q.BridgeAgent && p.OnDefaultRouter == q.OnDefaultRouter
}

// ConnectorOnHub reports whether the connector of a service of type typ
// sits on the hub (the hub agent's router, or the hub ConfigMap on
// Kubernetes), whose router reaches the backend itself: a k8s or an
// external service's. A microservice's or an agent's connector sits on
// the backend's own router, and only such a service can have a custom
// defaultBridge.
func ConnectorOnHub(typ string) bool {
	return typ == TypeK8s || typ == TypeExternal
}

// WithPlacement is svc as stored with placement p on control plane cp:
// the placement, and what the remote control plane assigns from it (the
// service port is the bridge port, there is no k8sType, and clients reach
// the service at the hub's host). On Kubernetes the spec's own service
// port and k8sType stand, and the endpoint is the LoadBalancer's, found
// by a reconcile.
func (svc Service) WithPlacement(p Placement, cp ControlPlane) Service {
	svc.Placement = p
	if cp.Kubernetes() {
		return svc
	}
	port := svc.BridgePort
	svc.ServicePort = &port
	svc.K8sType = nil
	svc.ServiceEndpoint = p.Endpoint
	return svc
}

// errNoRouter says why an agent cannot hold a service object.
func errNoRouter(a *inventory.Agent) error {
	return invalidf("Agent %s has routerMode none: a TCP bridge service requires a router on the agent", a.Name)
}

// Place decides where the objects of a service go (seed 000, "Where each
// object is stored") and checks that they can: every placement rule is
// here. On error the sites are empty and HubConfigMap false, so no router
// holds the service's objects; the errors (*ValidationError) are the ones only an inventory
// change can fix.
func Place(in PlacementInput) (Placement, error) {
	s := in.Service
	remote := !in.ControlPlane.Kubernetes()
	customBridge := s.DefaultBridge != DefaultBridge
	backendType := !ConnectorOnHub(s.Type)
	var p Placement
	if in.Backend != nil {
		p.BackendAgent = in.Backend.UUID
	}
	if customBridge && in.Bridge != nil {
		p.BridgeAgent = in.Bridge.UUID
	}
	p.OnDefaultRouter = remote && (!customBridge || !backendType)
	deps := Placement{BackendAgent: p.BackendAgent, BridgeAgent: p.BridgeAgent, OnDefaultRouter: p.OnDefaultRouter}

	if backendType {
		if in.Backend == nil {
			return deps, invalidf("The backend %s %s no longer exists", s.Type, s.Resource)
		}
		if !in.Backend.HasRouter() {
			return deps, errNoRouter(in.Backend)
		}
		p.ConnectorSite = in.Backend.UUID
	}
	// A custom bridge is an interior router the backend's router connects
	// to directly (one of its upstreamRouters), on either control plane.
	if customBridge {
		bridge := s.DefaultBridge
		if in.Bridge != nil {
			bridge = in.Bridge.Name
		}
		if in.Bridge == nil || !in.Bridge.HasRouter() {
			return deps, invalidf("Invalid router '%s'", bridge)
		}
		if in.Backend == nil || !slices.Contains(in.Backend.UpstreamRouters, in.Bridge.UUID) {
			backend := ""
			if in.Backend != nil {
				backend = in.Backend.Name
			}
			return deps, invalidf("Invalid router connection, router %s is not connected to %s", bridge, backend)
		}
	}
	if !remote {
		p.HubConfigMap = true
		return p, nil
	}
	if !backendType {
		if in.DefaultRouter == nil {
			return deps, errNoDefaultRouter
		}
		p.ConnectorSite = in.DefaultRouter.UUID
	}
	hub := in.DefaultRouter
	if customBridge {
		hub = in.Bridge
	} else if hub == nil {
		return deps, errNoDefaultRouter
	}
	p.HubSite = hub.UUID
	host := hub.Host
	p.Endpoint = &host
	return p, nil
}

var errNoDefaultRouter = invalidf("Default router not found: set defaultRouter on one interior agent")
