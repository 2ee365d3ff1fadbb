package service

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"svcbridge/document"
	"svcbridge/inventory"
)

// ValidationError is a client error (HTTP 400). Message is the text REST
// clients see; the reference controller's wording is kept where it has one.
// It is the document reader's error type, so that a field the reader
// refuses and a value Validate refuses reach the client alike.
type ValidationError = document.Error

func invalidf(format string, args ...any) *ValidationError {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

// Limits on a Spec. The name is also a Kubernetes Service name and a DNS
// label, hence 63. Tags have the inventory's limits.
const (
	MaxNameLength = validation.DNS1123LabelMaxLength // 63
	MaxTags       = inventory.MaxTags
	MaxTagLength  = inventory.MaxTagLength
	MinPort       = 1
	MaxPort       = 65535
)

// ReservedNames cannot be Service names: they would collide with the
// Kubernetes Services and router addresses of the platform itself.
var ReservedNames = []string{
	"controller", "router", "router-internal", "docker", "podman",
	"kubernetes", "nats", "nats-headless", "nats-server",
}

// Validate checks the syntax of a full Spec (after Patch.Apply) for the
// given control plane (ControlPlaneRemote or ControlPlaneKubernetes). The
// first failure wins. Lookups (does the microservice exist, is the bridge
// router connected) are the caller's job.
func Validate(s Spec, controlPlane ControlPlane) error {
	if err := validateName(s.Name); err != nil {
		return err
	}
	if !slices.Contains(Types, s.Type) {
		return invalidf("Field type is not one of enum values: %s", strings.Join(Types, ","))
	}
	if s.K8sType != nil && !slices.Contains(K8sTypes, *s.K8sType) {
		return invalidf("Field k8sType is not one of enum values: %s", strings.Join(K8sTypes, ","))
	}
	if err := validatePort("targetPort", s.TargetPort); err != nil {
		return err
	}
	if s.ServicePort != nil {
		if err := validatePort("servicePort", *s.ServicePort); err != nil {
			return err
		}
	}
	onKubernetes := controlPlane.Kubernetes()
	if s.Type == TypeK8s && !onKubernetes {
		return invalidf("Kubernetes environment is required for k8s service type")
	}
	getsService := GetsKubernetesService(s.Type, controlPlane)
	if getsService && (s.K8sType == nil || s.ServicePort == nil) {
		return errKubernetesServiceFields(s)
	}
	if err := validateResource(s.Type, s.Resource); err != nil {
		return err
	}
	if ConnectorOnHub(s.Type) && s.DefaultBridge != "" && s.DefaultBridge != DefaultBridge {
		return invalidf("Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'%s'", s.DefaultBridge)
	}
	// spec.kubernetes and the tags' annotations are set on the service's
	// Kubernetes Service: only a service that gets one may set the first,
	// and only its tags must be valid annotations.
	if s.Kubernetes != nil && !getsService {
		if !onKubernetes {
			return invalidf("Field 'kubernetes' applies only on the Kubernetes control plane (CONTROL_PLANE=kubernetes): the remote control plane creates no Kubernetes Service to set it on")
		}
		return invalidf("Field 'kubernetes' is not allowed for type k8s: svcbridge creates no Kubernetes Service for it")
	}
	if err := validateTags(s.Tags, getsService); err != nil {
		return err
	}
	return validateKubernetes(s)
}

// kubernetesServiceFields is the reference's message for a service that
// gets a Kubernetes Service without k8sType or servicePort. REST clients
// match it, so it stays first, word for word; what it fails to say (which
// field is missing) follows it.
const kubernetesServiceFields = "Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port"

// errKubernetesServiceFields names the fields s lacks for its Kubernetes
// Service (see GetsKubernetesService), after the reference's message.
func errKubernetesServiceFields(s Spec) error {
	k8sType := "'k8sType' (one of " + strings.Join(K8sTypes, ", ") + ")"
	servicePort := "'servicePort' (the Kubernetes Service's port)"
	missing := "field " + k8sType + " is"
	switch {
	case s.K8sType != nil:
		missing = "field " + servicePort + " is"
	case s.ServicePort == nil:
		missing = "fields " + k8sType + " and " + servicePort + " are"
	}
	return invalidf("%s: required %s missing: on the Kubernetes control plane a service of type %s gets a Kubernetes Service",
		kubernetesServiceFields, missing, s.Type)
}

func validateName(name string) error {
	// The reference schema's pattern: a DNS-1123 label.
	if !inventory.IsDNSLabel(name) {
		return invalidf("Invalid format for field 'name'")
	}
	if len(name) > MaxNameLength {
		return invalidf("Invalid length for field 'name': must be at most %d characters", MaxNameLength)
	}
	if slices.Contains(ReservedNames, strings.ToLower(name)) {
		quoted := make([]string, len(ReservedNames))
		for i, n := range ReservedNames {
			quoted[i] = `"` + n + `"`
		}
		return invalidf("Service name cannot be %s", strings.Join(quoted, " or "))
	}
	return nil
}

func validatePort(field string, port int) error {
	if port < MinPort || port > MaxPort {
		return invalidf("Field '%s' must be between %d and %d", field, MinPort, MaxPort)
	}
	return nil
}

// validateResource checks only the shape of resource; microservice and
// agent references are resolved (and so fully checked) by the caller.
func validateResource(typ, resource string) error {
	if resource == "" {
		return invalidf("Field 'resource' must not be empty")
	}
	switch typ {
	case TypeK8s, TypeExternal:
		if !inventory.IsHostOrIP(resource) {
			return invalidf("Invalid resource '%s' for type %s: must be a DNS name or an IP address", resource, typ)
		}
	case TypeMicroservice:
		// <application>/<microservice>, or a uuid without any '/'. The
		// reference silently ignored extra segments (a/b/c meant a/b).
		if strings.Contains(resource, "/") {
			app, ms, _ := strings.Cut(resource, "/")
			if app == "" || ms == "" || strings.Contains(ms, "/") {
				return invalidf("Invalid resource '%s' for type microservice: must be <application>/<microservice> or a microservice uuid", resource)
			}
		}
	}
	return nil
}

// CheckTags is the rule a Service's tags obey wherever they are given (a
// body's tags, the distribution preview's ?tags=): text, each given once,
// none blank, at most MaxTags of at most MaxTagLength bytes. Whether they
// are valid annotations too depends on the control plane (Validate).
func CheckTags(tags []string) error {
	if err := inventory.ValidateTags(tags); err != nil {
		return err
	}
	if err := document.CheckTextList("tags", tags); err != nil {
		return err
	}
	for i, t := range tags {
		if strings.TrimSpace(t) == "" {
			return invalidf("Field 'tags[%d]' must not be empty or blank", i)
		}
	}
	return nil
}

func validateTags(tags []string, asAnnotations bool) error {
	if err := CheckTags(tags); err != nil {
		return err
	}
	if asAnnotations {
		return ValidateAnnotations(tags)
	}
	return nil
}

// ValidateUpdate rejects changes to the immutable fields. Both specs must
// already be resolved the same way (an agent name in new is turned into the
// uuid stored in old by the caller); an empty defaultBridge means
// default-router on either side.
func ValidateUpdate(old, new Spec) error {
	if old.Name != new.Name {
		return invalidf("Changing service name is not allowed. Please delete the service and create a new one with the desired name.")
	}
	if old.Type != new.Type {
		return invalidf("Changing service type is not allowed. Please delete the service and create a new one with the desired type.")
	}
	if bridgeOrDefault(old.DefaultBridge) != bridgeOrDefault(new.DefaultBridge) {
		return invalidf("Changing default bridge is not allowed. Please delete the service and create a new one with the desired default bridge.")
	}
	return validateKubernetesUpdate(new, old)
}

// SameSpec reports whether b declares what a does, so that a write of b
// over a (an empty PATCH, a YAML document of what is stored) changes
// nothing: no new generation, no reconcile. Both must be resolved alike
// (references by uuid). Tags compare in order, none as none whether nil or
// empty; the rest as it is stored, so an absent option and an empty one
// (spec.kubernetes' omitempty fields) are the same.
func SameSpec(a, b Spec) bool {
	return slices.Equal(a.Tags, b.Tags) && storedForm(a) == storedForm(b)
}

// storedForm is s's JSON without its tags (stored apart).
func storedForm(s Spec) string {
	s.Tags = nil
	b, _ := json.Marshal(s) // strings, numbers and maps of strings: cannot fail
	return string(b)
}

func bridgeOrDefault(b string) string {
	if b == "" {
		return DefaultBridge
	}
	return b
}
