package kube

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"svcbridge/service"
)

// BuildService is the Kubernetes Service for a bridged Service (seed 000's
// worked object): the svcbridge labels, the router pods as selector, one TCP
// port named iofog-service from servicePort to bridgePort (the hub
// tcpListener), and the tags as annotations (service.Annotations; nil when
// there are none). k8sType is LoadBalancer, ClusterIP or NodePort. opts
// (spec.kubernetes, nil when absent) adds the options it declares, its
// annotations next to the tags' and its labels under svcbridge's own;
// what it leaves out stays unset here (see withServerDefaults).
func BuildService(cfg Config, name string, servicePort, bridgePort int, k8sType string, tags []string, opts *service.Kubernetes) *corev1.Service {
	cfg = cfg.WithDefaults()
	if opts == nil {
		opts = &service.Kubernetes{}
	}
	annotations := service.Annotations(tags)
	maps.Copy(annotations, opts.Annotations)
	if len(annotations) == 0 {
		annotations = nil
	}
	labels := maps.Clone(opts.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, cfg.Labels()) // svcbridge's own labels always win
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cfg.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceType(k8sType),
			Selector: cfg.Selector(),
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       int32(servicePort),
				TargetPort: intstr.FromInt32(int32(bridgePort)),
				Protocol:   corev1.ProtocolTCP,
			}},
			LoadBalancerSourceRanges:      slices.Clone(opts.LoadBalancerSourceRanges),
			ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicy(opts.ExternalTrafficPolicy),
			LoadBalancerClass:             clonePtr(opts.LoadBalancerClass),
			SessionAffinity:               corev1.ServiceAffinity(opts.SessionAffinity),
			AllocateLoadBalancerNodePorts: clonePtr(opts.AllocateLoadBalancerNodePorts),
		},
	}
	if opts.InternalTrafficPolicy != "" {
		p := corev1.ServiceInternalTrafficPolicy(opts.InternalTrafficPolicy)
		svc.Spec.InternalTrafficPolicy = &p
	}
	if c := opts.SessionAffinityConfig; c != nil {
		svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		if c.ClientIP != nil {
			svc.Spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
			if c.ClientIP.TimeoutSeconds != nil {
				svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(*c.ClientIP.TimeoutSeconds))
			}
		}
	}
	if opts.IPFamilyPolicy != "" {
		svc.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicy(opts.IPFamilyPolicy))
	}
	for _, f := range opts.IPFamilies {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPFamily(f))
	}
	return svc
}

// withServerDefaults is desired as kube-apiserver stores it: the options
// desired leaves unset get Kubernetes' defaults (v1.34 SetDefaults_Service
// and the IP allocator), so that removing an option from a svcbridge
// Service puts the default back, and a hand edit of one is seen. The IP
// families stay as the server picks them unless desired names them.
func withServerDefaults(desired *corev1.Service) *corev1.Service {
	d := desired.DeepCopy()
	s := &d.Spec
	lb := s.Type == corev1.ServiceTypeLoadBalancer
	if s.ExternalTrafficPolicy == "" && (lb || s.Type == corev1.ServiceTypeNodePort) {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.InternalTrafficPolicy == nil {
		s.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig == nil {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if s.SessionAffinityConfig.ClientIP == nil {
			s.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			s.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(service.DefaultAffinityTimeout))
		}
	}
	if s.IPFamilyPolicy == nil {
		s.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
	}
	if lb && s.AllocateLoadBalancerNodePorts == nil {
		s.AllocateLoadBalancerNodePorts = ptr(true)
	}
	return d
}

// optionField is one Kubernetes Service field spec.kubernetes sets, as
// desired (after withServerDefaults) and live have it.
type optionField struct {
	path             string
	want, have       any // comparable with reflect.DeepEqual
	wantSet, haveSet bool
}

// optionFields lists the option fields UpToDate compares and servicePatch
// writes. ipFamilies is listed only when desired names them.
func optionFields(live, desired *corev1.Service) []optionField {
	l, d := &live.Spec, &desired.Spec
	fields := []optionField{
		{"/spec/loadBalancerSourceRanges", d.LoadBalancerSourceRanges, l.LoadBalancerSourceRanges,
			len(d.LoadBalancerSourceRanges) > 0, len(l.LoadBalancerSourceRanges) > 0},
		{"/spec/externalTrafficPolicy", d.ExternalTrafficPolicy, l.ExternalTrafficPolicy,
			d.ExternalTrafficPolicy != "", l.ExternalTrafficPolicy != ""},
		{"/spec/internalTrafficPolicy", d.InternalTrafficPolicy, l.InternalTrafficPolicy,
			d.InternalTrafficPolicy != nil, l.InternalTrafficPolicy != nil},
		{"/spec/loadBalancerClass", d.LoadBalancerClass, l.LoadBalancerClass,
			d.LoadBalancerClass != nil, l.LoadBalancerClass != nil},
		{"/spec/sessionAffinity", d.SessionAffinity, l.SessionAffinity,
			d.SessionAffinity != "", l.SessionAffinity != ""},
		{"/spec/sessionAffinityConfig", d.SessionAffinityConfig, l.SessionAffinityConfig,
			d.SessionAffinityConfig != nil, l.SessionAffinityConfig != nil},
		{"/spec/ipFamilyPolicy", d.IPFamilyPolicy, l.IPFamilyPolicy,
			d.IPFamilyPolicy != nil, l.IPFamilyPolicy != nil},
		{"/spec/allocateLoadBalancerNodePorts", d.AllocateLoadBalancerNodePorts, l.AllocateLoadBalancerNodePorts,
			d.AllocateLoadBalancerNodePorts != nil, l.AllocateLoadBalancerNodePorts != nil},
	}
	if len(d.IPFamilies) > 0 {
		fields = append(fields, optionField{"/spec/ipFamilies", d.IPFamilies, l.IPFamilies, true, len(l.IPFamilies) > 0})
	}
	return fields
}

func (f optionField) upToDate() bool {
	return f.wantSet == f.haveSet && (!f.wantSet || reflect.DeepEqual(f.want, f.have))
}

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr(*p)
}
