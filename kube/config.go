// Package kube is svcbridge's Kubernetes side: the Kubernetes Service a
// bridged Service gets on a Kubernetes control plane (build, create or
// JSON-patch, delete, LoadBalancer ingress), and the hub router's ConfigMap
// (iofog-router, key skrouterd.json, an array of [type, object] pairs).
//
// What the objects look like and what to change is decided by pure
// functions (BuildService, PlanService, service.PlanHubPairs) that are
// tested without a cluster; the I/O functions (SyncService,
// PollLoadBalancer, UpdateHub) only do what they decide, idempotently, and
// touch only what svcbridge owns: a Service is ours when it carries
// app.kubernetes.io/managed-by=controller and
// app.kubernetes.io/instance=<ControllerName>; anything else of the same
// name is refused, never adopted.
package kube

import (
	"errors"
	"fmt"
	"time"
)

// Distributions of the controller: they decide the router component label.
const (
	DistributionDatasance = "datasance" // default: datasance.com/component
	DistributionIofog     = "iofog"     // iofog.org/component
)

// Labels written on every Kubernetes Service svcbridge creates (seed 000).
const (
	LabelName      = "app.kubernetes.io/name"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelInstance  = "app.kubernetes.io/instance"

	// ManagedByValue is the app.kubernetes.io/managed-by value that, with
	// app.kubernetes.io/instance=<ControllerName>, marks a Service as ours.
	ManagedByValue = "controller"
	// ComponentValue is the app.kubernetes.io/component value.
	ComponentValue = "controller"
	// RouterComponent is the value of the router component label
	// (<domain>/component), on the Service and in its selector.
	RouterComponent = "router"
	// PortName names the one port of the Service.
	PortName = "iofog-service"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultAppLabel       = "iofog"
	DefaultLBPollAttempts = 10
	DefaultLBPollInterval = 2 * time.Second
)

// Config is what the kube functions need to know about the controller they
// act for. Namespace is required; the rest has defaults (WithDefaults).
type Config struct {
	// Namespace is CONTROLLER_NAMESPACE: where Services and the hub
	// ConfigMap live. Required.
	Namespace string
	// ControllerName is CONTROLLER_NAME, the app.kubernetes.io/instance
	// label. Default: "pot" for the datasance distribution, "iofog" for
	// iofog (the reference controller's app.name defaults).
	ControllerName string
	// AppLabel is APP_LABEL, the app.kubernetes.io/name label. Default "iofog".
	AppLabel string
	// ComponentLabelDomain is COMPONENT_LABEL_DOMAIN: when set, the router
	// component label is <ComponentLabelDomain>/component whatever the
	// distribution.
	ComponentLabelDomain string
	// Distribution is "datasance" (default) or "iofog".
	Distribution string
	// LBPollAttempts and LBPollInterval bound PollLoadBalancer. Default 10 × 2s.
	LBPollAttempts int
	LBPollInterval time.Duration
}

// WithDefaults returns c with every empty field but Namespace set to its default.
func (c Config) WithDefaults() Config {
	if c.Distribution == "" {
		c.Distribution = DistributionDatasance
	}
	if c.ControllerName == "" {
		c.ControllerName = "pot"
		if c.Distribution == DistributionIofog {
			c.ControllerName = "iofog"
		}
	}
	if c.AppLabel == "" {
		c.AppLabel = DefaultAppLabel
	}
	if c.LBPollAttempts <= 0 {
		c.LBPollAttempts = DefaultLBPollAttempts
	}
	if c.LBPollInterval <= 0 {
		c.LBPollInterval = DefaultLBPollInterval
	}
	return c
}

// Validate reports a Config the I/O functions cannot work with: no
// namespace, or an unknown distribution. Call it at start-up.
func (c Config) Validate() error {
	if c.Namespace == "" {
		return errors.New("kube: the controller namespace (CONTROLLER_NAMESPACE) is required on a Kubernetes control plane")
	}
	switch c.Distribution {
	case "", DistributionDatasance, DistributionIofog:
	default:
		return fmt.Errorf("kube: unknown distribution %q: want %q or %q", c.Distribution, DistributionDatasance, DistributionIofog)
	}
	return nil
}

// RouterLabelKey is the router component label key, used as a label on the
// Service and as its selector: <ComponentLabelDomain>/component when the
// domain is set, else datasance.com/component (datasance) or
// iofog.org/component (iofog).
func (c Config) RouterLabelKey() string {
	domain := c.ComponentLabelDomain
	if domain == "" {
		domain = "datasance.com"
		if c.Distribution == DistributionIofog {
			domain = "iofog.org"
		}
	}
	return domain + "/component"
}

// Labels are the labels svcbridge writes on a Service it creates.
func (c Config) Labels() map[string]string {
	c = c.WithDefaults()
	return map[string]string{
		LabelName:          c.AppLabel,
		LabelComponent:     ComponentValue,
		LabelManagedBy:     ManagedByValue,
		LabelInstance:      c.ControllerName,
		c.RouterLabelKey(): RouterComponent,
	}
}

// Selector selects the router pods.
func (c Config) Selector() map[string]string {
	return map[string]string{c.RouterLabelKey(): RouterComponent}
}

// Owns reports whether an object with these labels is svcbridge's, for this
// controller instance.
func (c Config) Owns(labels map[string]string) bool {
	c = c.WithDefaults()
	return labels[LabelManagedBy] == ManagedByValue && labels[LabelInstance] == c.ControllerName
}
