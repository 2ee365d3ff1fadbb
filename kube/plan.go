package kube

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"svcbridge/service"
)

// ServiceAction is what the Kubernetes Service of a service needs.
type ServiceAction int

const (
	// ServiceKeep: nothing to write.
	ServiceKeep ServiceAction = iota
	// ServiceCreate: none exists; create Desired.
	ServiceCreate
	// ServicePatch: ours differs from Desired; patch Live to it.
	ServicePatch
	// ServiceDelete: ours is no longer wanted; delete Live.
	ServiceDelete
	// ServiceRefuse: a Service of that name is not ours. svcbridge never
	// adopts, changes or deletes it, and the service cannot have its own.
	ServiceRefuse
)

// ServiceChange is the change PlanService decides.
type ServiceChange struct {
	Action ServiceAction
	// Desired is the Service svcbridge wants; nil when it wants none.
	Desired *corev1.Service
	// Live is the Service found; nil when there is none.
	Live *corev1.Service
	// PollIngress says clients reach the service through a LoadBalancer
	// ingress, which the cloud provider fills in later.
	PollIngress bool
}

// ErrIncompleteService is PlanService's answer for a service that wants a
// Kubernetes Service but lacks what it is built from; validation keeps
// such a spec out, so only a row written on the remote control plane has
// it.
var ErrIncompleteService = errors.New("servicePort and k8sType are required on the Kubernetes control plane")

// PlanService decides the change to the Kubernetes Service of service name
// on the Kubernetes control plane, given the service (nil when deleted)
// and the live Service of that name (nil when none). A service that gets
// a Kubernetes Service (service.GetsKubernetesService) gets
// BuildService's; a deleted one and one that gets none (type k8s) get
// none: ours is deleted, a foreign one left alone.
func PlanService(cfg Config, name string, svc *service.Service, live *corev1.Service) (ServiceChange, error) {
	if svc == nil || !service.GetsKubernetesService(svc.Type, service.ControlPlaneKubernetes) {
		return diffService(cfg, nil, live), nil
	}
	if svc.ServicePort == nil || svc.K8sType == nil {
		return ServiceChange{Live: live}, ErrIncompleteService
	}
	c := diffService(cfg, BuildService(cfg, name, *svc.ServicePort, svc.BridgePort, *svc.K8sType, svc.Tags, svc.Kubernetes), live)
	c.PollIngress = *svc.K8sType == string(corev1.ServiceTypeLoadBalancer)
	return c, nil
}

// diffService is the change that brings live (nil: none) to desired (nil:
// none wanted), touching only a Service cfg owns.
func diffService(cfg Config, desired, live *corev1.Service) ServiceChange {
	c := ServiceChange{Desired: desired, Live: live}
	ours := live != nil && cfg.Owns(live.Labels)
	switch {
	case desired == nil && ours:
		c.Action = ServiceDelete
	case desired == nil:
	case live == nil:
		c.Action = ServiceCreate
	case !ours:
		c.Action = ServiceRefuse
	case !UpToDate(live, desired):
		c.Action = ServicePatch
	}
	return c
}
