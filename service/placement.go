package service

import (
	"fmt"

	"svcbridge/inventory"
)

// PlacementInput is what decides where a service's objects go.
type PlacementInput struct {
	Service      Service
	ControlPlane string
	// Backend is the agent running the microservice, or the agent itself;
	// nil for k8s and external.
	Backend *inventory.Agent
	// DefaultRouter is the hub agent of the remote control plane, nil if none.
	DefaultRouter *inventory.Agent
	// Bridge is the defaultBridge agent when it is not default-router.
	Bridge *inventory.Agent
}

// Placement names the agents (by uuid) that hold a service's connector and
// hub listener. An empty site is the Kubernetes hub ConfigMap.
type Placement struct {
	ConnectorSite string
	HubSite       string
	// Endpoint is where clients reach the hub: its host on the remote
	// control plane; nil where Kubernetes decides.
	Endpoint *string
}

// errNoRouter says why an agent cannot hold a service object.
func errNoRouter(a *inventory.Agent) error {
	return fmt.Errorf("Agent %s has routerMode none: a TCP bridge service requires a router on the agent", a.Name)
}

// Place decides where the objects of a service go (seed 000, "Where each
// object is stored"). Its errors are the ones only an inventory change can
// fix.
func Place(in PlacementInput) (Placement, error) {
	var p Placement
	s := in.Service
	remote := in.ControlPlane != ControlPlaneKubernetes
	switch s.Type {
	case TypeMicroservice, TypeAgent:
		if in.Backend == nil {
			return p, fmt.Errorf("The backend %s %s no longer exists", s.Type, s.Resource)
		}
		if !in.Backend.HasRouter() {
			return p, errNoRouter(in.Backend)
		}
		p.ConnectorSite = in.Backend.UUID
	default:
		if remote {
			if in.DefaultRouter == nil {
				return p, errNoDefaultRouter
			}
			p.ConnectorSite = in.DefaultRouter.UUID
		}
	}
	if !remote {
		return p, nil
	}
	hub := in.DefaultRouter
	if s.DefaultBridge != DefaultBridge {
		hub = in.Bridge
		if hub == nil {
			return p, fmt.Errorf("Invalid router '%s': the defaultBridge agent no longer exists", s.DefaultBridge)
		}
		if !hub.HasRouter() {
			return p, errNoRouter(hub)
		}
	} else if hub == nil {
		return p, errNoDefaultRouter
	}
	p.HubSite = hub.UUID
	host := hub.Host
	p.Endpoint = &host
	return p, nil
}

var errNoDefaultRouter = fmt.Errorf("Default router not found: set defaultRouter on one interior agent")
