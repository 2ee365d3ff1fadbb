package kube

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"svcbridge/service"
)

func ensureWith(t *testing.T, cfg Config, k8sType string, opts *service.Kubernetes) *corev1.Service {
	t.Helper()
	cs := needKube(t)
	if err := ensureService(testCtx(t), cs, cfg, BuildService(cfg, "checkout", 80, 10024, k8sType, []string{"owner: shop"}, opts)); err != nil {
		t.Fatalf("ensureService(%s %+v): %v", k8sType, opts, err)
	}
	return getService(t, cs, cfg, "checkout")
}

// checkOptions compares what the server stored with the options (and
// Kubernetes' defaults for the rest), and checks that ensuring the same
// again writes nothing: svcbridge's idea of the defaults is the server's.
func checkOptions(t *testing.T, cfg Config, live *corev1.Service, k8sType string, opts *service.Kubernetes) {
	t.Helper()
	desired := BuildService(cfg, "checkout", 80, 10024, k8sType, []string{"owner: shop"}, opts)
	if !UpToDate(live, desired) {
		t.Errorf("%s %+v: the stored Service differs from the desired one:\n%+v", k8sType, opts, live.Spec)
	}
	d := withServerDefaults(desired)
	if !slices.Equal(live.Spec.LoadBalancerSourceRanges, d.Spec.LoadBalancerSourceRanges) ||
		live.Spec.ExternalTrafficPolicy != d.Spec.ExternalTrafficPolicy ||
		!reflect.DeepEqual(live.Spec.LoadBalancerClass, d.Spec.LoadBalancerClass) ||
		!reflect.DeepEqual(live.Spec.SessionAffinityConfig, d.Spec.SessionAffinityConfig) ||
		!maps.Equal(live.Labels, d.Labels) || !maps.Equal(live.Annotations, d.Annotations) {
		t.Errorf("stored %+v %v %v, want %+v %v %v", live.Spec, live.Labels, live.Annotations, d.Spec, d.Labels, d.Annotations)
	}
	rv := live.ResourceVersion
	again := ensureWith(t, cfg, k8sType, opts)
	if again.ResourceVersion != rv {
		t.Errorf("%s %+v: ensuring the same Service again wrote it", k8sType, opts)
	}
}

// Create sets the options, a patch changes them, removing them (or the
// type that allows them) removes them from the Service, and a class can be
// set again after a type change: all on the real kube-apiserver.
func TestServiceOptions(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	steps := []struct {
		k8sType string
		opts    *service.Kubernetes
	}{
		{"LoadBalancer", &service.Kubernetes{
			LoadBalancerSourceRanges: []string{"10.0.0.0/8", "192.168.1.0/24"}, ExternalTrafficPolicy: "Local",
			InternalTrafficPolicy: "Local", LoadBalancerClass: ptr("example.com/internal"), SessionAffinity: "ClientIP",
			SessionAffinityConfig: &service.SessionAffinityConfig{ClientIP: &service.ClientIPConfig{TimeoutSeconds: ptr(600)}},
			IPFamilyPolicy:        "PreferDualStack", IPFamilies: []string{"IPv4"}, AllocateLoadBalancerNodePorts: ptr(false),
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
			Labels:      map[string]string{"team": "payments"}}},
		// Some changed, some removed; the class stays (it cannot change).
		{"LoadBalancer", &service.Kubernetes{
			LoadBalancerSourceRanges: []string{"203.0.113.0/24"}, ExternalTrafficPolicy: "Cluster",
			LoadBalancerClass: ptr("example.com/internal"), SessionAffinity: "ClientIP",
			Labels: map[string]string{"team": "edge", "tier": "front"}}},
		{"ClusterIP", nil},
		{"NodePort", &service.Kubernetes{ExternalTrafficPolicy: "Local", SessionAffinity: "ClientIP"}},
		{"LoadBalancer", &service.Kubernetes{LoadBalancerClass: ptr("example.com/other")}},
	}
	var uid string
	for i, s := range steps {
		live := ensureWith(t, cfg, s.k8sType, s.opts)
		if i == 0 {
			uid = string(live.UID)
		} else if string(live.UID) != uid {
			t.Errorf("step %d: the Service was recreated, not patched", i)
		}
		checkOptions(t, cfg, live, s.k8sType, s.opts)
	}
}

// The API server refuses a class change as svcbridge's request-time check
// does (service.ValidateUpdate), and the same bad options as
// service.Validate: the two rule sets agree.
func TestServiceOptionsRefusedAlike(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ensureWith(t, cfg, "LoadBalancer", &service.Kubernetes{LoadBalancerClass: ptr("example.com/a")})
	err := ensureService(testCtx(t), cs, cfg, BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", nil,
		&service.Kubernetes{LoadBalancerClass: ptr("example.com/b")}))
	if !apierrors.IsInvalid(err) {
		t.Errorf("class change: %v, want the server's 422", err)
	}
	old := service.Spec{Name: "checkout", Type: service.TypeMicroservice, K8sType: ptr("LoadBalancer"),
		Kubernetes: &service.Kubernetes{LoadBalancerClass: ptr("example.com/a")}}
	changed := old
	changed.Kubernetes = &service.Kubernetes{LoadBalancerClass: ptr("example.com/b")}
	if service.ValidateUpdate(old, changed) == nil {
		t.Error("service.ValidateUpdate let the class change")
	}

	for i, bad := range []struct {
		k8sType string
		opts    service.Kubernetes
	}{
		{"LoadBalancer", service.Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/33"}}},
		{"ClusterIP", service.Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}},
		{"ClusterIP", service.Kubernetes{ExternalTrafficPolicy: "Local"}},
		{"NodePort", service.Kubernetes{LoadBalancerClass: ptr("example.com/a")}},
		{"NodePort", service.Kubernetes{AllocateLoadBalancerNodePorts: ptr(true)}},
		{"ClusterIP", service.Kubernetes{SessionAffinity: "ClientIP", SessionAffinityConfig: &service.SessionAffinityConfig{
			ClientIP: &service.ClientIPConfig{TimeoutSeconds: ptr(86401)}}}},
		{"ClusterIP", service.Kubernetes{IPFamilyPolicy: "SingleStack", IPFamilies: []string{"IPv4", "IPv6"}}},
		{"ClusterIP", service.Kubernetes{IPFamilies: []string{"IPv4", "IPv4"}}},
		{"LoadBalancer", service.Kubernetes{Annotations: map[string]string{service.SourceRangesAnnotation: "10.0.0.0/8,nope"}}},
	} {
		spec := service.Spec{Name: "bad", Type: service.TypeMicroservice, Resource: "a/b", TargetPort: 1,
			ServicePort: ptr(80), K8sType: ptr(bad.k8sType), Kubernetes: &bad.opts}
		if service.Validate(spec, service.ControlPlaneKubernetes) == nil {
			t.Errorf("case %d: service.Validate accepted %s %+v", i, bad.k8sType, bad.opts)
		}
		_, err := cs.CoreV1().Services(cfg.Namespace).Create(testCtx(t),
			BuildService(cfg, "bad", 80, 10024, bad.k8sType, nil, &bad.opts), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("case %d: kube-apiserver answered %v to %s %+v, want 422", i, err, bad.k8sType, bad.opts)
		}
	}

	// Where svcbridge is stricter on purpose: Kubernetes defaults an empty
	// sessionAffinity to None and then drops the sessionAffinityConfig
	// without a word; svcbridge refuses it, so the user learns it would
	// have no effect.
	ignored := service.Kubernetes{SessionAffinityConfig: &service.SessionAffinityConfig{ClientIP: &service.ClientIPConfig{TimeoutSeconds: ptr(5)}}}
	spec := service.Spec{Name: "ignored", Type: service.TypeMicroservice, Resource: "a/b", TargetPort: 1,
		ServicePort: ptr(80), K8sType: ptr("ClusterIP"), Kubernetes: &ignored}
	if service.Validate(spec, service.ControlPlaneKubernetes) == nil {
		t.Error("service.Validate accepted a sessionAffinityConfig without ClientIP affinity")
	}
	live, err := cs.CoreV1().Services(cfg.Namespace).Create(testCtx(t),
		BuildService(cfg, "ignored", 80, 10024, "ClusterIP", nil, &ignored), metav1.CreateOptions{})
	if err != nil || live.Spec.SessionAffinityConfig != nil {
		t.Errorf("kube-apiserver: %v, sessionAffinityConfig %+v; want it accepted and dropped", err, live.Spec.SessionAffinityConfig)
	}
}

// A hand edit of any option is repaired by SyncService (what the drift
// check runs), keeping the Service.
func TestServiceOptionsDriftRepaired(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	opts := &service.Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, ExternalTrafficPolicy: "Local",
		SessionAffinity: "ClientIP", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"internal": "true"}}
	for name, edit := range map[string]func(s *corev1.Service){
		"source ranges":         func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"0.0.0.0/0"} },
		"source ranges removed": func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = nil },
		"externalTrafficPolicy": func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = "Cluster"; s.Spec.HealthCheckNodePort = 0 },
		"internalTrafficPolicy": func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal) },
		"session affinity": func(s *corev1.Service) {
			s.Spec.SessionAffinity, s.Spec.SessionAffinityConfig = corev1.ServiceAffinityNone, nil
		},
		"affinity timeout":   func(s *corev1.Service) { s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(5)) },
		"allocate nodePorts": func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr(false) },
		"label":              func(s *corev1.Service) { s.Labels["team"] = "b" },
		"annotation":         func(s *corev1.Service) { delete(s.Annotations, "internal") },
	} {
		t.Run(name, func(t *testing.T) {
			live := ensureWith(t, cfg, "LoadBalancer", opts)
			edit(live)
			if _, err := cs.CoreV1().Services(cfg.Namespace).Update(testCtx(t), live, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("hand edit: %v", err)
			}
			edited := getService(t, cs, cfg, "checkout")
			if UpToDate(edited, BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", []string{"owner: shop"}, opts)) {
				t.Fatal("the hand edit is not seen")
			}
			repaired := ensureWith(t, cfg, "LoadBalancer", opts)
			if repaired.UID != edited.UID {
				t.Error("the Service was recreated, not patched")
			}
			checkOptions(t, cfg, repaired, "LoadBalancer", opts)
		})
	}
}

// A LoadBalancer with options gets its ingress later: the poll sees none,
// then the address, and the options are still there.
func TestServiceOptionsIngressLater(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	opts := &service.Kubernetes{LoadBalancerSourceRanges: []string{"198.51.100.0/24"}, LoadBalancerClass: ptr("example.com/lb"),
		ExternalTrafficPolicy: "Local"}
	live := ensureWith(t, cfg, "LoadBalancer", opts)
	if _, err := PollLoadBalancer(testCtx(t), cs, cfg, "checkout"); !isErr[*NoIngressError](err) {
		t.Fatalf("poll before the ingress = %v, want NoIngressError", err)
	}
	live.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.9"}}
	if _, err := cs.CoreV1().Services(cfg.Namespace).UpdateStatus(testCtx(t), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoint, err := PollLoadBalancer(testCtx(t), cs, cfg, "checkout")
	if err != nil || endpoint != "203.0.113.9" {
		t.Fatalf("poll after the ingress = %q, %v", endpoint, err)
	}
	checkOptions(t, cfg, getService(t, cs, cfg, "checkout"), "LoadBalancer", opts)
}
