package kube

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"strings"
	"svcbridge/kube/kubetest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// newNamespace makes a fresh namespace and a Config for it (short LB polls).
func newNamespace(t *testing.T, cs kubernetes.Interface) Config {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(testCtx(t), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Namespace: ns.Name, ControllerName: "pot", LBPollAttempts: 3, LBPollInterval: 20 * time.Millisecond}
}

func getService(t *testing.T, cs kubernetes.Interface, cfg Config, name string) *corev1.Service {
	t.Helper()
	svc, err := cs.CoreV1().Services(cfg.Namespace).Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func ensure(t *testing.T, cs kubernetes.Interface, cfg Config, name string, servicePort, bridgePort int, k8sType string, tags []string) *corev1.Service {
	t.Helper()
	if err := ensureService(testCtx(t), cs, cfg, BuildService(cfg, name, servicePort, bridgePort, k8sType, tags, nil)); err != nil {
		t.Fatalf("ensureService(%s %s %d->%d %q): %v", name, k8sType, servicePort, bridgePort, tags, err)
	}
	return getService(t, cs, cfg, name)
}

// checkStored compares what the server stored with what svcbridge asked for.
func checkStored(t *testing.T, svc *corev1.Service, cfg Config, k8sType string, servicePort, bridgePort int, annotations map[string]string) {
	t.Helper()
	if string(svc.Spec.Type) != k8sType {
		t.Errorf("type = %s, want %s", svc.Spec.Type, k8sType)
	}
	if !maps.Equal(svc.Labels, cfg.Labels()) {
		t.Errorf("labels = %v, want %v", svc.Labels, cfg.Labels())
	}
	if !maps.Equal(svc.Spec.Selector, cfg.Selector()) {
		t.Errorf("selector = %v, want %v", svc.Spec.Selector, cfg.Selector())
	}
	if !maps.Equal(svc.Annotations, annotations) {
		t.Errorf("annotations = %v, want %v", svc.Annotations, annotations)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("ports = %+v", svc.Spec.Ports)
	}
	p := svc.Spec.Ports[0]
	if p.Name != PortName || p.Port != int32(servicePort) || p.TargetPort != intstr.FromInt32(int32(bridgePort)) || p.Protocol != corev1.ProtocolTCP {
		t.Errorf("port = %+v, want %s %d->%d TCP", p, PortName, servicePort, bridgePort)
	}
	if k8sType == "ClusterIP" {
		if p.NodePort != 0 {
			t.Errorf("a ClusterIP Service has nodePort %d", p.NodePort)
		}
	} else if p.NodePort < 30000 || p.NodePort > 32767 {
		t.Errorf("a %s Service has nodePort %d, want one allocated from 30000-32767", k8sType, p.NodePort)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == "None" {
		t.Errorf("clusterIP = %q, want an allocated IP", svc.Spec.ClusterIP)
	}
}

func TestEnsureServiceCreatesEachType(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	for i, k8sType := range []string{"ClusterIP", "NodePort", "LoadBalancer"} {
		name := strings.ToLower(k8sType)
		svc := ensure(t, cs, cfg, name, 8080+i, 10024+i, k8sType, []string{name})
		checkStored(t, svc, cfg, k8sType, 8080+i, 10024+i, map[string]string{name: ""})
		if svc.Namespace != cfg.Namespace {
			t.Errorf("namespace = %s, want %s", svc.Namespace, cfg.Namespace)
		}
	}
}

// The seed's worked object, as the server stores it.
func TestWorkedObjectAsStored(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	svc := ensure(t, cs, cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags)

	wantLabels := map[string]string{
		"app.kubernetes.io/name":       "iofog",
		"app.kubernetes.io/component":  "controller",
		"app.kubernetes.io/managed-by": "controller",
		"app.kubernetes.io/instance":   "pot",
		"datasance.com/component":      "router",
	}
	wantAnnotations := map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
	if svc.Name != "checkout" || svc.Namespace != cfg.Namespace {
		t.Errorf("name = %s/%s", svc.Namespace, svc.Name)
	}
	if !maps.Equal(svc.Labels, wantLabels) {
		t.Errorf("labels = %v", svc.Labels)
	}
	if !maps.Equal(svc.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !maps.Equal(svc.Spec.Selector, map[string]string{"datasance.com/component": "router"}) {
		t.Errorf("spec = %+v", svc.Spec)
	}
	checkStored(t, svc, cfg, "LoadBalancer", 80, 10024, wantAnnotations)
	// What the server defaulted (worth knowing when reading a live object).
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster ||
		svc.Spec.AllocateLoadBalancerNodePorts == nil || !*svc.Spec.AllocateLoadBalancerNodePorts ||
		svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("server defaults = %+v", svc.Spec)
	}
	if len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("ingress without a cloud provider: %+v", svc.Status.LoadBalancer)
	}

	// Ensuring the same object again writes nothing.
	if err := ensureService(testCtx(t), cs, cfg, BuildService(cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags, nil)); err != nil {
		t.Fatal(err)
	}
	if again := getService(t, cs, cfg, "checkout"); again.ResourceVersion != svc.ResourceVersion {
		t.Errorf("an unchanged Service was written: resourceVersion %s -> %s", svc.ResourceVersion, again.ResourceVersion)
	}
}

// Updates go through the JSON patch, from a Service created without
// annotations, across every type change, with foreign annotations removed.
func TestEnsureServiceUpdates(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)

	svc := ensure(t, cs, cfg, "checkout", 80, 10024, "ClusterIP", nil)
	if svc.Annotations != nil {
		t.Fatalf("created without tags, the server stored annotations %v", svc.Annotations)
	}
	uid := svc.UID

	steps := []struct {
		k8sType     string
		servicePort int
		bridgePort  int
		tags        []string
		annotations map[string]string
	}{
		{"LoadBalancer", 81, 10024, checkoutTags, map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
		{"NodePort", 81, 10030, []string{"checkout", "team=edge"}, map[string]string{"checkout": "", "team": "edge"}},
		{"NodePort", 82, 10030, []string{"checkout", "team=edge"}, map[string]string{"checkout": "", "team": "edge"}},
		{"ClusterIP", 82, 10030, nil, nil},
		{"NodePort", 83, 10031, []string{"a:b:c"}, map[string]string{"a": "b"}},
		{"LoadBalancer", 83, 10031, []string{"a:b:c"}, map[string]string{"a": "b"}},
		{"ClusterIP", 80, 10024, checkoutTags, map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
	}
	for i, s := range steps {
		// Someone adds an annotation by hand: the update replaces the map.
		live := getService(t, cs, cfg, "checkout")
		if i%2 == 0 {
			if live.Annotations == nil {
				live.Annotations = map[string]string{}
			}
			live.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
			if _, err := cs.CoreV1().Services(cfg.Namespace).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		before := getService(t, cs, cfg, "checkout")
		got := ensure(t, cs, cfg, "checkout", s.servicePort, s.bridgePort, s.k8sType, s.tags)
		checkStored(t, got, cfg, s.k8sType, s.servicePort, s.bridgePort, s.annotations)
		if got.UID != uid {
			t.Errorf("step %d: the Service was recreated, not patched", i)
		}
		if got.Spec.ClusterIP != before.Spec.ClusterIP {
			t.Errorf("step %d: clusterIP changed %s -> %s", i, before.Spec.ClusterIP, got.Spec.ClusterIP)
		}
		// The server keeps an allocated nodePort while the Service keeps needing one.
		if before.Spec.Type != corev1.ServiceTypeClusterIP && s.k8sType != "ClusterIP" &&
			got.Spec.Ports[0].NodePort != before.Spec.Ports[0].NodePort {
			t.Errorf("step %d: nodePort moved %d -> %d", i, before.Spec.Ports[0].NodePort, got.Spec.Ports[0].NodePort)
		}
		if s.k8sType != "LoadBalancer" && got.Spec.AllocateLoadBalancerNodePorts != nil {
			t.Errorf("step %d: allocateLoadBalancerNodePorts left on a %s Service", i, s.k8sType)
		}
	}
}

// Leaving LoadBalancer drops the nodePort and the ingress the cloud set.
func TestEnsureServiceLoadBalancerToClusterIP(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	svc := ensure(t, cs, cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags)
	setIngress(t, cs, svc, corev1.LoadBalancerIngress{IP: "203.0.113.7"})
	if ep, err := PollLoadBalancer(ctx, cs, cfg, "checkout"); err != nil || ep != "203.0.113.7" {
		t.Fatalf("PollLoadBalancer = %q, %v", ep, err)
	}
	got := ensure(t, cs, cfg, "checkout", 80, 10024, "ClusterIP", checkoutTags)
	if got.Spec.Ports[0].NodePort != 0 || len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("after LoadBalancer -> ClusterIP: ports %+v, status %+v", got.Spec.Ports, got.Status)
	}
	if ep, err := PollLoadBalancer(ctx, cs, cfg, "checkout"); err != nil || ep != "" {
		t.Errorf("PollLoadBalancer on ClusterIP = %q, %v", ep, err)
	}
}

// A change made between SyncService's read and its patch fails the
// resourceVersion test (422); SyncService reads and plans again, and wins.
func TestEnsureServiceRetriesAfterConcurrentChange(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ensure(t, cs, cfg, "checkout", 80, 10024, "ClusterIP", nil)

	desired := BuildService(cfg, "checkout", 80, 10024, "NodePort", checkoutTags, nil)
	var plans atomic.Int32
	change, err := SyncService(testCtx(t), cs, cfg, "checkout", func(live *corev1.Service) (ServiceChange, error) {
		if plans.Add(1) == 1 {
			changed := live.DeepCopy()
			changed.Annotations = map[string]string{"human": "was here"}
			if _, err := cs.CoreV1().Services(cfg.Namespace).Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
				t.Errorf("concurrent update: %v", err)
			}
		}
		return diffService(cfg, desired, live), nil
	})
	if err != nil || change.Action != ServicePatch {
		t.Fatalf("SyncService = %v, %v, want a patch", change.Action, err)
	}
	if n := plans.Load(); n != 2 {
		t.Errorf("planned %d times, want 2 (one patch lost to the concurrent change, one retried)", n)
	}
	got := getService(t, cs, cfg, "checkout")
	checkStored(t, got, cfg, "NodePort", 80, 10024, map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"})
}

// What the real API server does with the JSON patch operations EnsureService
// relies on (the facts its design rests on).
func TestServerJSONPatchSemantics(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	services := cs.CoreV1().Services(cfg.Namespace)
	svc := ensure(t, cs, cfg, "plain", 80, 10024, "NodePort", nil)
	patch := func(ops string) error {
		_, err := services.Patch(ctx, "plain", types.JSONPatchType, []byte(ops), metav1.PatchOptions{})
		return err
	}

	// "add" creates a missing member. (kube-apiserver v1.34's JSON patch
	// also lets "replace" create one, against RFC 6902; "remove" of a
	// missing member fails with a bare 422.)
	if err := patch(`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`); err != nil {
		t.Fatalf(`"add" of the missing /metadata/annotations: %v`, err)
	}
	if err := patch(`[{"op":"remove","path":"/metadata/annotations"}]`); err != nil {
		t.Fatal(err)
	}
	if err := patch(`[{"op":"replace","path":"/metadata/annotations","value":{"a":"b"}}]`); err != nil {
		t.Logf(`"replace" of the missing /metadata/annotations: HTTP %d: %v`, statusCode(err), err)
	} else {
		t.Logf(`"replace" of the missing /metadata/annotations was accepted`)
	}
	if err := patch(`[{"op":"remove","path":"/metadata/annotations"}]`); err != nil {
		t.Fatal(err)
	}
	if err := patch(`[{"op":"remove","path":"/metadata/annotations"}]`); statusCode(err) != 422 || !failedTest(err) {
		t.Errorf(`"remove" of the missing /metadata/annotations: HTTP %d %v`, statusCode(err), err)
	}
	if err := patch(`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`); err != nil {
		t.Fatal(err)
	}
	// "add" of an existing member replaces it whole.
	if err := patch(`[{"op":"add","path":"/metadata/annotations","value":{"c":"d"}}]`); err != nil {
		t.Fatal(err)
	}
	if got := getService(t, cs, cfg, "plain").Annotations; !maps.Equal(got, map[string]string{"c": "d"}) {
		t.Errorf(`"add" over existing annotations left %v`, got)
	}

	// A failed "test" is 422 and nothing is applied; failedTest tells it
	// from a validation error.
	err := patch(`[{"op":"test","path":"/metadata/resourceVersion","value":"` + svc.ResourceVersion + `"},{"op":"add","path":"/spec/type","value":"ClusterIP"}]`)
	if err == nil || !failedTest(err) {
		t.Fatalf("stale resourceVersion test: %v (failedTest=%v)", err, failedTest(err))
	}
	if statusCode(err) != 422 {
		t.Errorf("failed test op: HTTP %d %v, want 422", statusCode(err), err)
	}
	t.Logf("failed test op: %v", err)
	if got := getService(t, cs, cfg, "plain"); got.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("a patch whose test failed was applied: type %s", got.Spec.Type)
	}
	err = patch(`[{"op":"add","path":"/metadata/annotations","value":{"a=b":""}}]`)
	if err == nil || !apierrors.IsInvalid(err) || failedTest(err) {
		t.Errorf("invalid annotation key: %v (invalid=%v failedTest=%v)", err, apierrors.IsInvalid(err), failedTest(err))
	}

	// NodePort -> ClusterIP while the patch keeps the allocated nodePort:
	// the server drops it (the type-dependent field is cleared).
	live := getService(t, cs, cfg, "plain")
	ports, _ := json.Marshal(live.Spec.Ports)
	if err := patch(`[{"op":"add","path":"/spec/type","value":"ClusterIP"},{"op":"add","path":"/spec/ports","value":` + string(ports) + `}]`); err != nil {
		t.Errorf("NodePort -> ClusterIP keeping nodePort %d in the patch: %v", live.Spec.Ports[0].NodePort, err)
	} else if got := getService(t, cs, cfg, "plain"); got.Spec.Ports[0].NodePort != 0 {
		t.Errorf("NodePort -> ClusterIP kept nodePort %d", got.Spec.Ports[0].NodePort)
	}

	// A stale resourceVersion in an update is 409.
	live.Annotations = map[string]string{"x": "y"}
	if _, err := services.Update(ctx, live, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want 409 Conflict", err)
	}
}

// A bad annotation is reported at once, not retried.
func TestEnsureServiceInvalidAnnotation(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	start := time.Now()
	err := ensureService(testCtx(t), cs, cfg, BuildService(cfg, "checkout", 80, 10024, "ClusterIP", []string{" sp : x", "a b"}, nil))
	if err == nil || !apierrors.IsInvalid(err) {
		t.Fatalf("EnsureService with an invalid annotation key = %v", err)
	}
	ensure(t, cs, cfg, "checkout", 80, 10024, "ClusterIP", nil)
	err = ensureService(testCtx(t), cs, cfg, BuildService(cfg, "checkout", 80, 10024, "ClusterIP", []string{"a b"}, nil))
	if err == nil || !apierrors.IsInvalid(err) {
		t.Fatalf("patch with an invalid annotation key = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("an invalid Service took %v: retried?", d)
	}
}

func TestForeignServiceRefused(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	services := cs.CoreV1().Services(cfg.Namespace)
	foreign := func(name string, labels map[string]string) *corev1.Service {
		svc, err := services.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"owner": "someone else"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "checkout"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		wantMsg string
	}{
		{"checkout", map[string]string{"app.kubernetes.io/managed-by": "Helm"}, ""},
		{"other-instance", map[string]string{"app.kubernetes.io/managed-by": "controller", "app.kubernetes.io/instance": "other"}, `it belongs to controller instance "other"`},
		{"no-labels", nil, ""},
	} {
		before := foreign(tc.name, tc.labels)
		for _, k8sType := range []string{"ClusterIP", "LoadBalancer"} {
			err := ensureService(ctx, cs, cfg, BuildService(cfg, tc.name, 80, 10024, k8sType, checkoutTags, nil))
			var fe *ErrForeignService
			if !errors.As(err, &fe) {
				t.Fatalf("%s: EnsureService over a foreign Service = %v, want *ErrForeignService", tc.name, err)
			}
			want := "a Kubernetes Service named " + tc.name + " already exists in namespace " + cfg.Namespace + " and is not managed by svcbridge"
			if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; delete or rename it") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("message = %q", err.Error())
			}
		}
		if err := deleteService(ctx, cs, cfg, tc.name); err != nil {
			t.Errorf("DeleteService of a foreign Service: %v", err)
		}
		after := getService(t, cs, cfg, tc.name)
		if after.ResourceVersion != before.ResourceVersion || after.UID != before.UID {
			t.Errorf("%s: the foreign Service was touched: resourceVersion %s -> %s", tc.name, before.ResourceVersion, after.ResourceVersion)
		}
	}
}

func TestDeleteService(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	ensure(t, cs, cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags)
	if err := deleteService(ctx, cs, cfg, "checkout"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(cfg.Namespace).Get(ctx, "checkout", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after DeleteService, Get = %v, want NotFound", err)
	}
	if err := deleteService(ctx, cs, cfg, "checkout"); err != nil {
		t.Errorf("DeleteService of a missing Service = %v", err)
	}
	if err := deleteService(ctx, cs, cfg, "never-was"); err != nil {
		t.Errorf("DeleteService of a never created Service = %v", err)
	}
	// Another controller instance's Service (same labels but instance) is not ours.
	other := cfg
	other.ControllerName = "other"
	ensure(t, cs, other, "shared", 80, 10024, "ClusterIP", nil)
	if err := deleteService(ctx, cs, cfg, "shared"); err != nil {
		t.Fatal(err)
	}
	getService(t, cs, cfg, "shared")
	// A Service deleted and recreated later can be ensured again.
	ensure(t, cs, cfg, "checkout", 80, 10024, "ClusterIP", nil)
}

func setIngress(t *testing.T, cs kubernetes.Interface, svc *corev1.Service, ingress ...corev1.LoadBalancerIngress) {
	t.Helper()
	// The test plays the cloud provider: it writes the status subresource.
	for {
		live, err := cs.CoreV1().Services(svc.Namespace).Get(testCtx(t), svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Status.LoadBalancer.Ingress = ingress
		if _, err = cs.CoreV1().Services(svc.Namespace).UpdateStatus(testCtx(t), live, metav1.UpdateOptions{}); err == nil {
			return
		} else if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
}

func TestPollLoadBalancer(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	svc := ensure(t, cs, cfg, "checkout", 80, 10024, "LoadBalancer", checkoutTags)

	// No cloud provider: no ingress after every check, and no wait after the last.
	start := time.Now()
	ep, err := PollLoadBalancer(ctx, cs, cfg, "checkout")
	elapsed := time.Since(start)
	var ni *NoIngressError
	if !errors.As(err, &ni) || ep != "" {
		t.Fatalf("PollLoadBalancer without ingress = %q, %v, want *NoIngressError", ep, err)
	}
	if ni.Checks != 3 || err.Error() != "load balancer for service checkout has no ingress yet after 3 checks" {
		t.Errorf("NoIngressError = %+v: %v", ni, err)
	}
	if elapsed < 2*cfg.LBPollInterval || elapsed > 2*cfg.LBPollInterval+time.Second {
		t.Errorf("3 checks 20ms apart took %v", elapsed)
	}

	// The cloud provider assigns an IP; the server adds ipMode VIP.
	setIngress(t, cs, svc, corev1.LoadBalancerIngress{IP: "203.0.113.7"})
	if ep, err := PollLoadBalancer(ctx, cs, cfg, "checkout"); err != nil || ep != "203.0.113.7" {
		t.Errorf("with an IP ingress: %q, %v", ep, err)
	}
	if got := getService(t, cs, cfg, "checkout").Status.LoadBalancer.Ingress[0]; got.IPMode == nil || *got.IPMode != corev1.LoadBalancerIPModeVIP {
		t.Logf("ingress stored as %+v", got)
	}
	// A hostname only (AWS ELB style).
	setIngress(t, cs, svc, corev1.LoadBalancerIngress{Hostname: "a1b2.elb.example.com"})
	if ep, err := PollLoadBalancer(ctx, cs, cfg, "checkout"); err != nil || ep != "a1b2.elb.example.com" {
		t.Errorf("with a hostname ingress: %q, %v", ep, err)
	}

	// Ingress appearing while polling.
	setIngress(t, cs, svc)
	slow := cfg
	slow.LBPollAttempts, slow.LBPollInterval = 200, 10*time.Millisecond
	done := make(chan string, 1)
	go func() {
		ep, err := PollLoadBalancer(ctx, cs, slow, "checkout")
		if err != nil {
			t.Errorf("polling while ingress appears: %v", err)
		}
		done <- ep
	}()
	time.Sleep(100 * time.Millisecond)
	setIngress(t, cs, svc, corev1.LoadBalancerIngress{IP: "203.0.113.9"})
	select {
	case ep := <-done:
		if ep != "203.0.113.9" {
			t.Errorf("endpoint = %q, want 203.0.113.9", ep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("polling did not see the ingress")
	}

	// A cancelled context stops the polling.
	cctx, cancel := context.WithCancel(ctx)
	setIngress(t, cs, svc)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := PollLoadBalancer(cctx, cs, slow, "checkout"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled polling = %v", err)
	}

	// ClusterIP and NodePort have no load balancer: "" at once.
	for _, k8sType := range []string{"ClusterIP", "NodePort"} {
		ensure(t, cs, cfg, strings.ToLower(k8sType), 80, 10024, k8sType, nil)
		if ep, err := PollLoadBalancer(ctx, cs, slow, strings.ToLower(k8sType)); err != nil || ep != "" {
			t.Errorf("%s: PollLoadBalancer = %q, %v", k8sType, ep, err)
		}
	}
	// A missing Service is an error at once, not "no ingress yet".
	if _, err := PollLoadBalancer(ctx, cs, slow, "missing"); err == nil || isErr[*NoIngressError](err) || !apierrors.IsNotFound(err) {
		t.Errorf("missing Service: %v", err)
	}
}

func TestNewClient(t *testing.T) {
	needKube(t)
	path := t.TempDir() + "/kubeconfig"
	if err := os.WriteFile(path, kubetest.Kubeconfig(t), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(cs kubernetes.Interface, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(testCtx(t), "default", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	}
	check(NewClient(path))
	t.Setenv("KUBECONFIG", path)
	check(NewClient(""))
	rc, err := RESTConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if rc.QPS != ClientQPS || rc.Burst != ClientBurst || rc.UserAgent != "svcbridge" {
		t.Errorf("rest config QPS %v burst %d agent %q", rc.QPS, rc.Burst, rc.UserAgent)
	}
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	if _, err := NewClient(""); err == nil {
		t.Error("NewClient with a missing kubeconfig succeeded")
	}
}

func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}
