package kube

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"svcbridge/service"
)

// The seed's worked object for the checkout example (seed 000, "Kubernetes
// control plane"), after bridgePort 10024 was assigned.
var checkoutTags = []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}

func TestConfigDefaults(t *testing.T) {
	got := Config{Namespace: "ns"}.WithDefaults()
	want := Config{Namespace: "ns", ControllerName: "pot", AppLabel: "iofog", Distribution: "datasance",
		LBPollAttempts: 10, LBPollInterval: 2 * time.Second}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	if got := (Config{Namespace: "ns", Distribution: "iofog"}).WithDefaults().ControllerName; got != "iofog" {
		t.Errorf("iofog default controller name = %q, want iofog", got)
	}
	kept := Config{Namespace: "ns", ControllerName: "edge", AppLabel: "app", Distribution: "iofog", LBPollAttempts: 3, LBPollInterval: time.Millisecond}
	if got := kept.WithDefaults(); got != kept {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{Namespace: "ns"}, ""},
		{Config{Namespace: "ns", Distribution: "iofog"}, ""},
		{Config{Namespace: "ns", Distribution: "datasance"}, ""},
		{Config{}, "namespace"},
		{Config{Namespace: "ns", Distribution: "other"}, `unknown distribution "other"`},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want error containing %q", tc.cfg, err, tc.wantErr)
		}
	}
}

func TestRouterLabelKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "datasance.com/component"},
		{Config{Distribution: "datasance"}, "datasance.com/component"},
		{Config{Distribution: "iofog"}, "iofog.org/component"},
		{Config{ComponentLabelDomain: "example.com"}, "example.com/component"},
		{Config{Distribution: "iofog", ComponentLabelDomain: "edge.example.com"}, "edge.example.com/component"},
	} {
		if got := tc.cfg.RouterLabelKey(); got != tc.want {
			t.Errorf("RouterLabelKey(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

func TestBuildService(t *testing.T) {
	for _, tc := range []struct {
		name            string
		cfg             Config
		svcName         string
		servicePort     int
		bridgePort      int
		k8sType         string
		tags            []string
		wantLabels      map[string]string
		wantSelector    map[string]string
		wantAnnotations map[string]string
	}{
		{
			name: "seed worked object", cfg: Config{Namespace: "datasance", ControllerName: "pot"},
			svcName: "checkout", servicePort: 80, bridgePort: 10024, k8sType: "LoadBalancer", tags: checkoutTags,
			wantLabels: map[string]string{
				"app.kubernetes.io/name":       "iofog",
				"app.kubernetes.io/component":  "controller",
				"app.kubernetes.io/managed-by": "controller",
				"app.kubernetes.io/instance":   "pot",
				"datasance.com/component":      "router",
			},
			wantSelector: map[string]string{"datasance.com/component": "router"},
			wantAnnotations: map[string]string{
				"checkout": "",
				"service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
			},
		},
		{
			name: "iofog distribution", cfg: Config{Namespace: "iofog", Distribution: "iofog", ControllerName: "ctl", AppLabel: "edge"},
			svcName: "ssh", servicePort: 22, bridgePort: 10025, k8sType: "NodePort", tags: []string{"a:b:c"},
			wantLabels: map[string]string{
				"app.kubernetes.io/name":       "edge",
				"app.kubernetes.io/component":  "controller",
				"app.kubernetes.io/managed-by": "controller",
				"app.kubernetes.io/instance":   "ctl",
				"iofog.org/component":          "router",
			},
			wantSelector:    map[string]string{"iofog.org/component": "router"},
			wantAnnotations: map[string]string{"a": "b"},
		},
		{
			name: "COMPONENT_LABEL_DOMAIN", cfg: Config{Namespace: "ns", Distribution: "iofog", ComponentLabelDomain: "example.com"},
			svcName: "vendor", servicePort: 443, bridgePort: 10026, k8sType: "ClusterIP", tags: nil,
			wantLabels: map[string]string{
				"app.kubernetes.io/name":       "iofog",
				"app.kubernetes.io/component":  "controller",
				"app.kubernetes.io/managed-by": "controller",
				"app.kubernetes.io/instance":   "iofog",
				"example.com/component":        "router",
			},
			wantSelector:    map[string]string{"example.com/component": "router"},
			wantAnnotations: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := BuildService(tc.cfg, tc.svcName, tc.servicePort, tc.bridgePort, tc.k8sType, tc.tags, nil)
			if svc.APIVersion != "v1" || svc.Kind != "Service" {
				t.Errorf("apiVersion/kind = %q/%q", svc.APIVersion, svc.Kind)
			}
			if svc.Name != tc.svcName || svc.Namespace != tc.cfg.Namespace {
				t.Errorf("name = %s/%s, want %s/%s", svc.Namespace, svc.Name, tc.cfg.Namespace, tc.svcName)
			}
			if !maps.Equal(svc.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", svc.Labels, tc.wantLabels)
			}
			if !maps.Equal(svc.Spec.Selector, tc.wantSelector) {
				t.Errorf("selector = %v, want %v", svc.Spec.Selector, tc.wantSelector)
			}
			if !maps.Equal(svc.Annotations, tc.wantAnnotations) || (tc.wantAnnotations == nil && svc.Annotations != nil) {
				t.Errorf("annotations = %#v, want %#v", svc.Annotations, tc.wantAnnotations)
			}
			if string(svc.Spec.Type) != tc.k8sType {
				t.Errorf("type = %q, want %q", svc.Spec.Type, tc.k8sType)
			}
			wantPorts := []corev1.ServicePort{{Name: "iofog-service", Port: int32(tc.servicePort),
				TargetPort: intstr.FromInt32(int32(tc.bridgePort)), Protocol: corev1.ProtocolTCP}}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0] != wantPorts[0] {
				t.Errorf("ports = %+v, want %+v", svc.Spec.Ports, wantPorts)
			}
			if svc.Spec.Ports[0].TargetPort.Type != intstr.Int {
				t.Errorf("targetPort is not an integer: %+v", svc.Spec.Ports[0].TargetPort)
			}
			if svc.Spec.ClusterIP != "" || svc.Spec.ExternalTrafficPolicy != "" || svc.ResourceVersion != "" {
				t.Errorf("fields the server assigns are set: %+v", svc.Spec)
			}
		})
	}
}

// The worked object serialises to the seed's YAML fields, and nothing more
// in spec than the seed shows.
func TestBuildServiceJSON(t *testing.T) {
	svc := BuildService(Config{Namespace: "datasance", ControllerName: "pot"}, "checkout", 80, 10024, "LoadBalancer", checkoutTags, nil)
	b, err := json.Marshal(svc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(got["spec"])
	const wantSpec = `{"ports":[{"name":"iofog-service","port":80,"protocol":"TCP","targetPort":10024}],"selector":{"datasance.com/component":"router"},"type":"LoadBalancer"}`
	if string(spec) != wantSpec {
		t.Errorf("spec = %s\nwant   %s", spec, wantSpec)
	}
}

const ownLabels = `{"app.kubernetes.io/component":"controller","app.kubernetes.io/instance":"pot","app.kubernetes.io/managed-by":"controller","app.kubernetes.io/name":"iofog","datasance.com/component":"router"}`

func TestServicePatch(t *testing.T) {
	cfg := Config{Namespace: "ns"}
	fresh := &corev1.Service{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}
	// live as the server holds an LB created with options.
	withOptions := BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", nil, &service.Kubernetes{
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, LoadBalancerClass: ptr("example.com/lb"),
		ExternalTrafficPolicy: "Local", Labels: map[string]string{"team": "a"}})
	withOptions = withServerDefaults(withOptions)
	withOptions.ResourceVersion = "42"
	for _, tc := range []struct {
		name      string
		live, svc *corev1.Service
		want      string
	}{
		{
			name: "worked object", live: fresh,
			svc: BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags, nil),
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
				`{"op":"add","path":"/spec/type","value":"LoadBalancer"},` +
				`{"op":"add","path":"/spec/selector","value":{"datasance.com/component":"router"}},` +
				`{"op":"add","path":"/spec/ports","value":[{"name":"iofog-service","protocol":"TCP","port":80,"targetPort":10024}]},` +
				`{"op":"add","path":"/metadata/annotations","value":{"checkout":"","service.beta.kubernetes.io/aws-load-balancer-type":"nlb"}},` +
				`{"op":"add","path":"/metadata/labels","value":` + ownLabels + `},` +
				`{"op":"add","path":"/spec/externalTrafficPolicy","value":"Cluster"},` +
				`{"op":"add","path":"/spec/internalTrafficPolicy","value":"Cluster"},` +
				`{"op":"add","path":"/spec/sessionAffinity","value":"None"},` +
				`{"op":"add","path":"/spec/ipFamilyPolicy","value":"SingleStack"},` +
				`{"op":"add","path":"/spec/allocateLoadBalancerNodePorts","value":true}]`,
		},
		{
			name: "no tags clears the annotations", live: fresh,
			svc: BuildService(cfg, "checkout", 80, 10024, "ClusterIP", nil, nil),
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
				`{"op":"add","path":"/spec/type","value":"ClusterIP"},` +
				`{"op":"add","path":"/spec/selector","value":{"datasance.com/component":"router"}},` +
				`{"op":"add","path":"/spec/ports","value":[{"name":"iofog-service","protocol":"TCP","port":80,"targetPort":10024}]},` +
				`{"op":"add","path":"/metadata/annotations","value":{}},` +
				`{"op":"add","path":"/metadata/labels","value":` + ownLabels + `},` +
				`{"op":"add","path":"/spec/internalTrafficPolicy","value":"Cluster"},` +
				`{"op":"add","path":"/spec/sessionAffinity","value":"None"},` +
				`{"op":"add","path":"/spec/ipFamilyPolicy","value":"SingleStack"}]`,
		},
		{
			name: "options removed with the type: removes only what live has", live: withOptions,
			svc: BuildService(cfg, "checkout", 80, 10024, "ClusterIP", nil, &service.Kubernetes{SessionAffinity: "ClientIP"}),
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
				`{"op":"add","path":"/spec/type","value":"ClusterIP"},` +
				`{"op":"add","path":"/spec/selector","value":{"datasance.com/component":"router"}},` +
				`{"op":"add","path":"/spec/ports","value":[{"name":"iofog-service","protocol":"TCP","port":80,"targetPort":10024}]},` +
				`{"op":"add","path":"/metadata/annotations","value":{}},` +
				`{"op":"add","path":"/metadata/labels","value":` + ownLabels + `},` +
				`{"op":"remove","path":"/spec/loadBalancerSourceRanges"},` +
				`{"op":"remove","path":"/spec/externalTrafficPolicy"},` +
				`{"op":"add","path":"/spec/internalTrafficPolicy","value":"Cluster"},` +
				`{"op":"remove","path":"/spec/loadBalancerClass"},` +
				`{"op":"add","path":"/spec/sessionAffinity","value":"ClientIP"},` +
				`{"op":"add","path":"/spec/sessionAffinityConfig","value":{"clientIP":{"timeoutSeconds":10800}}},` +
				`{"op":"add","path":"/spec/ipFamilyPolicy","value":"SingleStack"},` +
				`{"op":"remove","path":"/spec/allocateLoadBalancerNodePorts"}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := servicePatch(tc.live, tc.svc)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch = %s\nwant    %s", got, tc.want)
			}
		})
	}
}

// BuildService writes only what spec.kubernetes declares; withServerDefaults
// adds what kube-apiserver defaults the rest to.
func TestBuildServiceOptions(t *testing.T) {
	cfg := Config{Namespace: "ns", ControllerName: "pot"}
	opts := &service.Kubernetes{
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, ExternalTrafficPolicy: "Local", InternalTrafficPolicy: "Local",
		LoadBalancerClass: ptr("example.com/lb"), SessionAffinity: "ClientIP",
		SessionAffinityConfig: &service.SessionAffinityConfig{ClientIP: &service.ClientIPConfig{TimeoutSeconds: ptr(60)}},
		IPFamilyPolicy:        "PreferDualStack", IPFamilies: []string{"IPv4", "IPv6"}, AllocateLoadBalancerNodePorts: ptr(false),
		Annotations: map[string]string{"internal": "true"},
		// app.kubernetes.io/instance is refused at request time; here svcbridge's value still wins.
		Labels: map[string]string{"team": "a", LabelInstance: "other"},
	}
	svc := BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", []string{"owner: x"}, opts)
	want := corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: cfg.Selector(), Ports: svc.Spec.Ports,
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, ExternalTrafficPolicy: "Local", InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyLocal),
		LoadBalancerClass: ptr("example.com/lb"), SessionAffinity: "ClientIP",
		SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(60))}},
		IPFamilyPolicy:        ptr(corev1.IPFamilyPolicyPreferDualStack), IPFamilies: []corev1.IPFamily{"IPv4", "IPv6"},
		AllocateLoadBalancerNodePorts: ptr(false),
	}
	if !reflect.DeepEqual(svc.Spec, want) {
		t.Errorf("spec = %+v\nwant   %+v", svc.Spec, want)
	}
	if !maps.Equal(svc.Annotations, map[string]string{"owner": "x", "internal": "true"}) {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	wantLabels := cfg.Labels()
	wantLabels["team"] = "a"
	if !maps.Equal(svc.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", svc.Labels, wantLabels)
	}
	if !reflect.DeepEqual(withServerDefaults(svc).Spec, want) {
		t.Errorf("defaults overrode declared options: %+v", withServerDefaults(svc).Spec)
	}

	for _, tc := range []struct {
		k8sType string
		opts    *service.Kubernetes
		want    corev1.ServiceSpec
	}{
		{"LoadBalancer", nil, corev1.ServiceSpec{ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
			SessionAffinity: "None", IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack), AllocateLoadBalancerNodePorts: ptr(true)}},
		{"NodePort", nil, corev1.ServiceSpec{ExternalTrafficPolicy: "Cluster", InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
			SessionAffinity: "None", IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack)}},
		{"ClusterIP", &service.Kubernetes{SessionAffinity: "ClientIP"}, corev1.ServiceSpec{InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
			SessionAffinity:       "ClientIP",
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(10800))}},
			IPFamilyPolicy:        ptr(corev1.IPFamilyPolicySingleStack)}},
	} {
		d := withServerDefaults(BuildService(cfg, "checkout", 80, 10024, tc.k8sType, nil, tc.opts)).Spec
		d.Type, d.Selector, d.Ports = "", nil, nil
		if !reflect.DeepEqual(d, tc.want) {
			t.Errorf("%s %+v defaults = %+v\nwant %+v", tc.k8sType, tc.opts, d, tc.want)
		}
	}
}

func TestUpToDate(t *testing.T) {
	cfg := Config{Namespace: "ns"}
	desired := BuildService(cfg, "checkout", 80, 10024, "NodePort", checkoutTags, nil)
	live := withServerDefaults(desired)
	live.ResourceVersion = "7"
	live.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol} // the server's pick: not compared
	live.Spec.ClusterIP = "10.0.0.1"
	live.Spec.Ports[0].NodePort = 31000
	live.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if !UpToDate(live, desired) {
		t.Error("server-assigned fields made a live Service look out of date")
	}
	for name, change := range map[string]func(s *corev1.Service){
		"type":              func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
		"port":              func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 },
		"targetPort":        func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(10025) },
		"named targetPort":  func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("x") },
		"port name":         func(s *corev1.Service) { s.Spec.Ports[0].Name = "other" },
		"extra port":        func(s *corev1.Service) { s.Spec.Ports = append(s.Spec.Ports, s.Spec.Ports[0]) },
		"selector":          func(s *corev1.Service) { s.Spec.Selector = map[string]string{"iofog.org/component": "router"} },
		"extra annotation":  func(s *corev1.Service) { s.Annotations["kubectl.kubernetes.io/x"] = "y" },
		"annotation value":  func(s *corev1.Service) { s.Annotations["checkout"] = "x" },
		"annotations empty": func(s *corev1.Service) { s.Annotations = nil },
		"extra label":       func(s *corev1.Service) { s.Labels["x"] = "y" },
		"externalTrafficPolicy": func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		},
		"source ranges added":   func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"0.0.0.0/0"} },
		"session affinity":      func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
		"internalTrafficPolicy": func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal) },
	} {
		changed := live.DeepCopy()
		change(changed)
		if UpToDate(changed, desired) {
			t.Errorf("%s: a changed Service looks up to date", name)
		}
	}
	noTags := BuildService(cfg, "checkout", 80, 10024, "ClusterIP", nil, nil)
	liveNoTags := withServerDefaults(noTags)
	liveNoTags.Annotations = map[string]string{}
	if !UpToDate(liveNoTags, noTags) {
		t.Error("an empty annotation map differs from none")
	}
}

func TestErrorMessages(t *testing.T) {
	foreign := &ErrForeignService{Namespace: "datasance", Name: "checkout", ControllerName: "pot"}
	want := "a Kubernetes Service named checkout already exists in namespace datasance and is not managed by svcbridge " +
		"(labels app.kubernetes.io/managed-by=controller, app.kubernetes.io/instance=pot); delete or rename it"
	if foreign.Error() != want {
		t.Errorf("ErrForeignService = %q\nwant                %q", foreign.Error(), want)
	}
	other := &ErrForeignService{Namespace: "datasance", Name: "checkout", ControllerName: "pot",
		Labels: map[string]string{LabelManagedBy: "controller", LabelInstance: "other"}}
	if !strings.Contains(other.Error(), `it belongs to controller instance "other"`) {
		t.Errorf("ErrForeignService for another instance = %q", other.Error())
	}
	noIngress := &NoIngressError{Namespace: "ns", Name: "checkout", Checks: 10}
	if got := noIngress.Error(); got != "load balancer for service checkout has no ingress yet after 10 checks" {
		t.Errorf("NoIngressError = %q", got)
	}
	noHub := &NoHubConfigMapError{Namespace: "datasance"}
	if got := noHub.Error(); got != "ConfigMap iofog-router not found in namespace datasance: the hub router's config must exist" {
		t.Errorf("NoHubConfigMapError = %q", got)
	}
}

func TestIngressEndpoint(t *testing.T) {
	for _, tc := range []struct {
		ingress []corev1.LoadBalancerIngress
		want    string
	}{
		{nil, ""},
		{[]corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}, "203.0.113.7"},
		{[]corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}, "lb.example.com"},
		{[]corev1.LoadBalancerIngress{{IP: "203.0.113.7", Hostname: "lb.example.com"}}, "203.0.113.7"},
		{[]corev1.LoadBalancerIngress{{Hostname: "first.example.com"}, {IP: "203.0.113.8"}}, "first.example.com"},
	} {
		svc := &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: tc.ingress}}}
		if got := IngressEndpoint(svc); got != tc.want {
			t.Errorf("IngressEndpoint(%+v) = %q, want %q", tc.ingress, got, tc.want)
		}
	}
}
