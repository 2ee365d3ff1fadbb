package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"gopkg.in/yaml.v3"

	"svcbridge/document"
)

// Kubernetes is spec.kubernetes: options of the Kubernetes Service svcbridge
// creates for a Service on the Kubernetes control plane (seed 004's names
// and meanings). An absent option leaves Kubernetes' default.
type Kubernetes struct {
	// LoadBalancerSourceRanges are the CIDRs allowed to reach a
	// LoadBalancer (Juju's expose --to-cidrs).
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	ExternalTrafficPolicy    string   `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy    string   `json:"internalTrafficPolicy,omitempty"`
	// LoadBalancerClass cannot change while the type stays LoadBalancer.
	LoadBalancerClass             *string                `json:"loadBalancerClass,omitempty"`
	SessionAffinity               string                 `json:"sessionAffinity,omitempty"`
	SessionAffinityConfig         *SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"`
	IPFamilyPolicy                string                 `json:"ipFamilyPolicy,omitempty"`
	IPFamilies                    []string               `json:"ipFamilies,omitempty"`
	AllocateLoadBalancerNodePorts *bool                  `json:"allocateLoadBalancerNodePorts,omitempty"`
	// Annotations are added to the tag-derived ones (a key both set is
	// refused); Labels to svcbridge's own (which they may not name).
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// SessionAffinityConfig is spec.kubernetes.sessionAffinityConfig.
type SessionAffinityConfig struct {
	ClientIP *ClientIPConfig `json:"clientIP,omitempty"`
}

// ClientIPConfig is sessionAffinityConfig.clientIP.
type ClientIPConfig struct {
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
}

// Kubernetes' values and limits for these fields (k8s.io/api/core/v1).
const (
	LoadBalancer             = "LoadBalancer"
	NodePort                 = "NodePort"
	PolicyCluster            = "Cluster"
	PolicyLocal              = "Local"
	AffinityNone             = "None"
	AffinityClientIP         = "ClientIP"
	SingleStack              = "SingleStack"
	PreferDualStack          = "PreferDualStack"
	RequireDualStack         = "RequireDualStack"
	IPv4                     = "IPv4"
	IPv6                     = "IPv6"
	MaxAffinityTimeout       = 86400 // core.MaxClientIPServiceAffinitySeconds
	DefaultAffinityTimeout   = 10800 // what Kubernetes defaults timeoutSeconds to
	SourceRangesAnnotation   = "service.beta.kubernetes.io/load-balancer-source-ranges"
	kubernetesField          = "kubernetes"
	kubernetesAnnotationsKey = "annotations"
)

var (
	trafficPolicies  = []string{PolicyCluster, PolicyLocal}
	affinities       = []string{AffinityClientIP, AffinityNone}
	ipFamilyPolicies = []string{PreferDualStack, RequireDualStack, SingleStack}
	ipFamilies       = []string{IPv4, IPv6}
	// ReservedLabelKeys are svcbridge's own labels on a Kubernetes Service;
	// the router component label (<domain>/component) is reserved too,
	// whatever its configured domain.
	ReservedLabelKeys = []string{"app.kubernetes.io/name", "app.kubernetes.io/component",
		"app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}
)

// GetsKubernetesService reports whether a service of type typ gets a
// Kubernetes Service of its own on control plane cp: on the Kubernetes
// control plane, every type but k8s, whose backend is in the cluster
// already. It is what spec.kubernetes, servicePort and k8sType configure
// and what the tags' annotations go on.
func GetsKubernetesService(typ string, cp ControlPlane) bool {
	return cp.Kubernetes() && typ != TypeK8s
}

// KubernetesPatch is spec.kubernetes as a request gave it: each key given,
// with its raw value (null removes that option). Present with no fields
// and Null set means the whole block was null.
type KubernetesPatch struct {
	Null   bool
	Fields map[string]json.RawMessage
}

// apply merges p into old: a JSON PATCH changes only the options it names
// (RFC 7386 for the block's top level; annotations, labels and the other
// values are replaced whole). Applied to nil it is the block as given.
func (p KubernetesPatch) apply(old *Kubernetes) *Kubernetes {
	if p.Null {
		return nil
	}
	merged := map[string]json.RawMessage{}
	if old != nil {
		b, _ := json.Marshal(old)
		_ = json.Unmarshal(b, &merged)
	}
	for k, v := range p.Fields {
		if document.IsJSONNull(v) {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	b, _ := json.Marshal(merged)
	var out Kubernetes
	_ = json.Unmarshal(b, &out) // the types were checked by decodeKubernetes
	if reflect.DeepEqual(out, Kubernetes{}) {
		return nil
	}
	return &out
}

// decodeKubernetesValue reads the block from a decoded JSON body or YAML
// document. Its strings meet the text rule here: a YAML document's meet it
// nowhere else (a JSON body's already did, in its reader).
func decodeKubernetesValue(v any) (*KubernetesPatch, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, document.NotOfType(kubernetesField, "object")
	}
	if err := document.CheckJSON(kubernetesField, b); err != nil {
		return nil, err
	}
	return decodeKubernetes(b)
}

// yamlKubernetes reads spec.kubernetes of a YAML document through its JSON
// form, so both encodings obey one decoder. Absent is nil.
func yamlKubernetes(n *yaml.Node) (*KubernetesPatch, error) {
	if n == nil {
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, document.NotOfType(kubernetesField, "object")
	}
	// A mapping with a non-string key decodes to map[any]any, which JSON
	// cannot hold: not an object with field names.
	return decodeKubernetesValue(v)
}

// decodeKubernetes reads the block from its JSON text: an object whose
// known keys have the right JSON types (null allowed: it removes the
// option), or null. Shape errors name the field.
func decodeKubernetes(raw []byte) (*KubernetesPatch, error) {
	if document.IsJSONNull(raw) {
		return &KubernetesPatch{Null: true}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, document.NotOfType(kubernetesField, "object")
	}
	given := map[string]json.RawMessage{}
	for k, v := range fields {
		if !document.IsJSONNull(v) {
			given[k] = v
		}
	}
	b, _ := json.Marshal(given)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var k Kubernetes
	if err := dec.Decode(&k); err != nil {
		return nil, kubernetesDecodeError(err)
	}
	for _, name := range []string{"externalTrafficPolicy", "internalTrafficPolicy", "sessionAffinity", "ipFamilyPolicy"} {
		if v, ok := given[name]; ok && string(v) == `""` {
			return nil, invalidf("Field '%s.%s' must not be empty: omit it, or give null to remove it", kubernetesField, name)
		}
	}
	return &KubernetesPatch{Fields: fields}, nil
}

func kubernetesDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return document.NotOfType(kubernetesField+"."+typeErr.Field, jsonTypeName(typeErr.Type))
	}
	// encoding/json's only other error here is an unknown field.
	return invalidf("Invalid field '%s': %s", kubernetesField, strings.TrimPrefix(err.Error(), "json: "))
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "array"
	default:
		return "object"
	}
}

// kubernetesError turns the first Kubernetes-style field error into a 400.
func kubernetesError(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return invalidf("Invalid field '%s': %s", errs[0].Field, errs[0].ErrorBody())
}

// ValidateKubernetes checks spec.kubernetes of s, a Service that gets a
// Kubernetes Service, as kube-apiserver (v1.34) validates the same fields
// of that Service, so a bad option is a 400 now rather than a failed
// reconcile later. ValidateUpdate checks the immutable ones.
func validateKubernetes(s Spec) error {
	k := s.Kubernetes
	if k == nil {
		return nil
	}
	typ := ""
	if s.K8sType != nil {
		typ = *s.K8sType
	}
	root := field.NewPath(kubernetesField)
	var errs field.ErrorList
	lb := typ == LoadBalancer

	if len(k.LoadBalancerSourceRanges) > 0 {
		p := root.Child("loadBalancerSourceRanges")
		if !lb {
			errs = append(errs, field.Forbidden(p, "may only be used when `k8sType` is 'LoadBalancer'"))
		}
		for i, v := range k.LoadBalancerSourceRanges {
			// Kubernetes trims these (a legacy of the annotation) and,
			// without the alpha StrictIPCIDRValidation gate, parses them
			// as k8s.io/utils/net's ParseCIDRSloppy does.
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(v), false, nil)...)
		}
	}

	externallyAccessible := lb || typ == NodePort
	if v := k.ExternalTrafficPolicy; v != "" {
		p := root.Child("externalTrafficPolicy")
		if !externallyAccessible {
			errs = append(errs, field.Invalid(p, v, "may only be set for externally-accessible services (k8sType LoadBalancer or NodePort)"))
		} else if !slices.Contains(trafficPolicies, v) {
			errs = append(errs, field.NotSupported(p, v, trafficPolicies))
		}
	}
	if v := k.InternalTrafficPolicy; v != "" && !slices.Contains(trafficPolicies, v) {
		errs = append(errs, field.NotSupported(root.Child("internalTrafficPolicy"), v, trafficPolicies))
	}

	if k.LoadBalancerClass != nil {
		p := root.Child("loadBalancerClass")
		if lb {
			errs = append(errs, apivalidationQualifiedName(*k.LoadBalancerClass, p)...)
		} else {
			errs = append(errs, field.Forbidden(p, "may only be used when `k8sType` is 'LoadBalancer'"))
		}
	}
	if k.AllocateLoadBalancerNodePorts != nil && !lb {
		errs = append(errs, field.Forbidden(root.Child("allocateLoadBalancerNodePorts"), "may only be used when `k8sType` is 'LoadBalancer'"))
	}

	errs = append(errs, validateAffinity(root, k)...)
	errs = append(errs, validateIPFamilies(root, k)...)
	errs = append(errs, validateMeta(root, k, Annotations(s.Tags), lb)...)
	return kubernetesError(errs)
}

func apivalidationQualifiedName(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateAffinity(root *field.Path, k *Kubernetes) field.ErrorList {
	p := root.Child("sessionAffinityConfig")
	affinity := k.SessionAffinity
	if affinity == "" {
		affinity = AffinityNone // Kubernetes' default
	}
	switch {
	case !slices.Contains(affinities, affinity):
		return field.ErrorList{field.NotSupported(root.Child("sessionAffinity"), affinity, affinities)}
	case affinity == AffinityNone && k.SessionAffinityConfig != nil:
		return field.ErrorList{field.Forbidden(p, "must not be set when session affinity is None")}
	case affinity == AffinityClientIP && k.SessionAffinityConfig != nil:
		// Kubernetes defaults a missing clientIP or timeout to 10800 s.
		if c := k.SessionAffinityConfig.ClientIP; c != nil && c.TimeoutSeconds != nil {
			if t := *c.TimeoutSeconds; t <= 0 || t > MaxAffinityTimeout {
				return field.ErrorList{field.Invalid(p.Child("clientIP", "timeoutSeconds"), t,
					fmt.Sprintf("must be greater than 0 and less than %d", MaxAffinityTimeout))}
			}
		}
	}
	return nil
}

func validateIPFamilies(root *field.Path, k *Kubernetes) field.ErrorList {
	var errs field.ErrorList
	p := root.Child("ipFamilies")
	seen := map[string]bool{}
	for i, f := range k.IPFamilies {
		if !slices.Contains(ipFamilies, f) {
			errs = append(errs, field.NotSupported(p.Index(i), f, ipFamilies))
		}
		if seen[f] {
			errs = append(errs, field.Duplicate(p.Index(i), f))
		}
		seen[f] = true
	}
	if len(k.IPFamilies) > 2 {
		errs = append(errs, field.Invalid(p, k.IPFamilies, "may be one or two entries"))
	}
	policy := root.Child("ipFamilyPolicy")
	if k.IPFamilyPolicy != "" && !slices.Contains(ipFamilyPolicies, k.IPFamilyPolicy) {
		errs = append(errs, field.NotSupported(policy, k.IPFamilyPolicy, ipFamilyPolicies))
	}
	// An absent policy is SingleStack on create (the API server's
	// allocator), which two families contradict.
	if len(k.IPFamilies) == 2 && (k.IPFamilyPolicy == "" || k.IPFamilyPolicy == SingleStack) {
		errs = append(errs, field.Invalid(policy, k.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	return errs
}

// validateMeta checks the extra annotations and labels: valid keys and
// values, within the size limit together with the tags' annotations, not
// colliding with those nor with svcbridge's labels, and the source-ranges
// annotation as Kubernetes checks it.
func validateMeta(root *field.Path, k *Kubernetes, tagAnnotations map[string]string, lb bool) field.ErrorList {
	var errs field.ErrorList
	ap := root.Child(kubernetesAnnotationsKey)
	all := make(map[string]string, len(tagAnnotations)+len(k.Annotations))
	for key, v := range tagAnnotations {
		all[key] = v
	}
	for _, key := range slices.Sorted(maps.Keys(k.Annotations)) {
		if _, ok := tagAnnotations[key]; ok {
			errs = append(errs, field.Forbidden(ap.Key(key), "is also set by a tag: set it in one place"))
		}
		all[key] = k.Annotations[key]
	}
	errs = append(errs, apivalidation.ValidateAnnotations(k.Annotations, ap)...)
	if err := apivalidation.ValidateAnnotationsSize(all); err != nil {
		errs = append(errs, field.TooLong(ap, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	if v, ok := all[SourceRangesAnnotation]; ok && len(k.LoadBalancerSourceRanges) == 0 {
		p := ap.Key(SourceRangesAnnotation)
		if !lb {
			errs = append(errs, field.Forbidden(p, "may only be used when `k8sType` is 'LoadBalancer'"))
		}
		if v = strings.TrimSpace(v); v != "" {
			for _, cidr := range strings.Split(v, ",") {
				errs = append(errs, validation.IsValidCIDRForLegacyField(p, strings.TrimSpace(cidr), false, nil)...)
			}
		}
	}

	lp := root.Child("labels")
	errs = append(errs, metavalidation.ValidateLabels(k.Labels, lp)...)
	for _, key := range slices.Sorted(maps.Keys(k.Labels)) {
		if slices.Contains(ReservedLabelKeys, key) || strings.HasSuffix(key, "/component") {
			errs = append(errs, field.Forbidden(lp.Key(key), "is one of svcbridge's own labels"))
		}
	}
	return errs
}

// validateKubernetesUpdate is Kubernetes' update rules for these fields:
// loadBalancerClass cannot change while the type stays LoadBalancer, and
// the primary IP family cannot change.
func validateKubernetesUpdate(s, old Spec) error {
	root := field.NewPath(kubernetesField)
	var errs field.ErrorList
	k, was := orEmpty(s.Kubernetes), orEmpty(old.Kubernetes)
	if isLB(s) && isLB(old) && !equalPtr(k.LoadBalancerClass, was.LoadBalancerClass) {
		errs = append(errs, field.Invalid(root.Child("loadBalancerClass"), k.LoadBalancerClass,
			"may not change once set while k8sType stays LoadBalancer (change k8sType, or delete and create the service)"))
	}
	if len(k.IPFamilies) > 0 && len(was.IPFamilies) > 0 && k.IPFamilies[0] != was.IPFamilies[0] {
		errs = append(errs, field.Invalid(root.Child("ipFamilies").Index(0), k.IPFamilies, "may not change once set"))
	}
	if len(k.IPFamilies) > 0 && len(k.IPFamilies) < len(was.IPFamilies) && k.IPFamilyPolicy != SingleStack {
		errs = append(errs, field.Invalid(root.Child("ipFamilyPolicy"), k.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
	}
	return kubernetesError(errs)
}

func orEmpty(k *Kubernetes) *Kubernetes {
	if k == nil {
		return &Kubernetes{}
	}
	return k
}

func isLB(s Spec) bool { return s.K8sType != nil && *s.K8sType == LoadBalancer }

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
