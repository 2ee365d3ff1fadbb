package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"svcbridge/kube"
	"svcbridge/kube/kubetest"
	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/workflows"
)

// kubeSystem is svcbridge on a Kubernetes control plane: a real
// kube-apiserver, the hub ConfigMap in a fresh namespace holding a pair a
// human added, and quick LoadBalancer polling.
func kubeSystem(t *testing.T) (*system, kubernetes.Interface, string) {
	cs := kubetest.Client(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "svcbridge-"}}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	human := `[["listener", {"name": "amqp", "port": "5672"}]]`
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: kube.HubConfigMapName},
		Data:       map[string]string{kube.HubConfigKey: human},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := kube.Config{Namespace: ns.Name, ControllerName: "pot", LBPollAttempts: 3, LBPollInterval: 50 * time.Millisecond}
	s := newSystem(t, "sqlite", 1, kubernetesPlane, func(s *system) { s.kube, s.kubeCfg = cs, cfg })
	return s, cs, ns.Name
}

// hubPairs reads the hub ConfigMap's pairs as kind/name → object.
func hubPairs(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), kube.HubConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := routerconfig.HubEntries([]byte(cm.Data[kube.HubConfigKey]))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		var compact strings.Builder
		var v any
		json.Unmarshal(e.Object, &v)
		b, _ := json.Marshal(v)
		compact.Write(b)
		out[e.Kind+"/"+e.Name] = compact.String()
	}
	return out
}

func TestKubernetesControlPlane(t *testing.T) {
	s, cs, ns := kubeSystem(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services(ns)
	s.agent(map[string]any{"name": "fog-a", "routerMode": "edge"})
	s.microservice(map[string]any{"uuid": checkoutUUID, "application": "orders", "name": "checkout", "agent": "fog-a"})

	// Seed 000's Kubernetes example: a LoadBalancer without ingress fails,
	// saying so, until the cloud provider (this test) gives it an address.
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080,
		"servicePort": 80, "k8sType": "LoadBalancer",
		"tags": []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}}, nil)
	failed := s.waitStatus("checkout", service.StatusFailed)
	if failed.ProvisioningError == nil || !strings.Contains(*failed.ProvisioningError, "no ingress") {
		t.Errorf("provisioningError %v, want it to say the load balancer has no ingress", failed.ProvisioningError)
	}
	k, err := svcs.Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app.kubernetes.io/name": "iofog", "app.kubernetes.io/component": "controller",
		"app.kubernetes.io/managed-by": "controller", "app.kubernetes.io/instance": "pot", "datasance.com/component": "router"}
	for key, v := range want {
		if k.Labels[key] != v {
			t.Errorf("label %s=%q, want %q", key, k.Labels[key], v)
		}
	}
	if k.Spec.Type != corev1.ServiceTypeLoadBalancer || len(k.Spec.Selector) != 1 || k.Spec.Selector["datasance.com/component"] != "router" {
		t.Errorf("type %s selector %v", k.Spec.Type, k.Spec.Selector)
	}
	if len(k.Spec.Ports) != 1 || k.Spec.Ports[0].Name != "iofog-service" || k.Spec.Ports[0].Port != 80 ||
		k.Spec.Ports[0].TargetPort != intstr.FromInt32(int32(failed.BridgePort)) || k.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v, want iofog-service 80 -> %d TCP", k.Spec.Ports, failed.BridgePort)
	}
	if k.Annotations["checkout"] != "" || k.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] != "nlb" || len(k.Annotations) != 2 {
		t.Errorf("annotations %v", k.Annotations)
	}
	k.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	if _, err := svcs.UpdateStatus(ctx, k, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.must(http.StatusAccepted, "POST", "/api/v3/services/checkout/reconcile", nil, nil)
	ready := s.waitStatus("checkout", service.StatusReady)
	if ready.ServiceEndpoint == nil || *ready.ServiceEndpoint != "198.51.100.7" {
		t.Errorf("serviceEndpoint %v, want the ingress ip", ready.ServiceEndpoint)
	}
	// The hub listener is in the ConfigMap; the connector is on fog-a.
	pairs := hubPairs(t, cs, ns)
	if pairs["tcpListener/checkout-listener"] == "" || pairs["tcpConnector/checkout-connector"] != "" || pairs["listener/amqp"] == "" {
		t.Errorf("hub pairs %v: want the checkout listener, no connector, the human's pair", pairs)
	}
	if _, c := s.bridges("fog-a"); c["checkout-connector"] == nil {
		t.Errorf("checkout-connector missing on fog-a")
	}

	// type k8s: the connector dials the cluster DNS name from the hub; no
	// Kubernetes Service.
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "payments", "type": "k8s", "resource": "payments.payments.svc.cluster.local", "targetPort": 8080}, nil)
	pay := s.waitStatus("payments", service.StatusReady)
	pairs = hubPairs(t, cs, ns)
	wantConn := `{"address":"payments","host":"payments.payments.svc.cluster.local","name":"payments-connector","port":"8080","processId":"payments.payments.svc.cluster.local-k8s-8080"}`
	if pairs["tcpConnector/payments-connector"] != wantConn {
		t.Errorf("payments connector %s, want %s", pairs["tcpConnector/payments-connector"], wantConn)
	}
	if pay.ServiceEndpoint != nil {
		t.Errorf("k8s type got serviceEndpoint %v", *pay.ServiceEndpoint)
	}
	if _, err := svcs.Get(ctx, "payments", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Kubernetes Service was created for type k8s: %v", err)
	}

	// An external ClusterIP service, then an update through the patch.
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443,
		"servicePort": 443, "k8sType": "ClusterIP"}, nil)
	s.waitStatus("vendor", service.StatusReady)
	s.must(http.StatusNoContent, "PATCH", "/api/v3/services/vendor", map[string]any{"k8sType": "NodePort", "servicePort": 8443, "tags": []string{"team: vendor"}}, nil)
	s.waitStatus("vendor", service.StatusReady)
	v, err := svcs.Get(ctx, "vendor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec.Type != corev1.ServiceTypeNodePort || v.Spec.Ports[0].Port != 8443 || v.Annotations["team"] != "vendor" {
		t.Errorf("after PATCH: type %s port %d annotations %v", v.Spec.Type, v.Spec.Ports[0].Port, v.Annotations)
	}

	// Deleted by hand: /reconcile creates it again.
	if err := svcs.Delete(ctx, "vendor", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.must(http.StatusAccepted, "POST", "/api/v3/services/vendor/reconcile", nil, nil)
	s.waitFor("vendor's Kubernetes Service to come back", 30*time.Second, func() (bool, string) {
		_, err := svcs.Get(ctx, "vendor", metav1.GetOptions{})
		return err == nil, "absent"
	})

	// A Service of that name that is not ours is never adopted.
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1234}}}}
	if _, err := svcs.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "legacy", "type": "external", "resource": "203.0.113.11", "targetPort": 22, "servicePort": 22, "k8sType": "ClusterIP"}, nil)
	leg := s.waitStatus("legacy", service.StatusFailed)
	if leg.ProvisioningError == nil || !strings.Contains(*leg.ProvisioningError, "not managed by svcbridge") {
		t.Errorf("provisioningError %v, want the foreign-Service conflict", leg.ProvisioningError)
	}
	if got, _ := svcs.Get(ctx, "legacy", metav1.GetOptions{}); got.Spec.Ports[0].Port != 1234 || len(got.Labels) != 0 {
		t.Errorf("the foreign Service was changed: %+v", got)
	}

	// Delete leaves no Kubernetes Service and no pair of ours behind.
	for _, name := range []string{"checkout", "payments", "vendor", "legacy"} {
		s.must(http.StatusNoContent, "DELETE", "/api/v3/services/"+name, nil, nil)
	}
	s.waitFor("everything of ours gone", 30*time.Second, func() (bool, string) {
		pairs := hubPairs(t, cs, ns)
		list, err := svcs.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=controller"})
		if err != nil {
			return false, err.Error()
		}
		return len(pairs) == 1 && pairs["listener/amqp"] != "" && len(list.Items) == 0, ""
	})
	if _, err := svcs.Get(ctx, "legacy", metav1.GetOptions{}); err != nil {
		t.Errorf("deleting our service removed the foreign Service: %v", err)
	}
}

// TestKubernetesConcurrentCreatesKeepEveryHubPair creates services in
// parallel against two workers: the ConfigMap's compare-and-swap keeps
// every listener.
func TestKubernetesConcurrentCreatesKeepEveryHubPair(t *testing.T) {
	s, cs, ns := kubeSystem(t)
	s.startWorker()
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
				"name": fmt.Sprintf("db-%02d", i), "type": "k8s", "resource": "db.data.svc.cluster.local", "targetPort": 5432 + i}, nil)
		}()
	}
	wg.Wait()
	s.waitFor("every pair in the ConfigMap", 60*time.Second, func() (bool, string) {
		pairs := hubPairs(t, cs, ns)
		return len(pairs) == 2*n+1, fmt.Sprintf("%d pairs, want %d", len(pairs), 2*n+1)
	})
}

// TestKubernetesDriftIsRepaired deletes a Kubernetes Service and edits the
// hub ConfigMap behind svcbridge's back; the drift check puts both back and
// counts the repairs.
func TestKubernetesDriftIsRepaired(t *testing.T) {
	s, cs, ns := kubeSystem(t)
	ctx := context.Background()
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443,
		"servicePort": 443, "k8sType": "ClusterIP"}, nil)
	s.waitStatus("vendor", service.StatusReady)
	// A second service, edited behind the API's back so that no reconcile
	// runs: the drift check does the edit's work early, which repairs
	// nothing.
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "spare", "type": "external", "resource": "203.0.113.11", "targetPort": 443,
		"servicePort": 8443, "k8sType": "ClusterIP"}, nil)
	s.waitStatus("spare", service.StatusReady)
	want := hubPairs(t, cs, ns)
	if err := s.store.InTx(ctx, func(tx *store.Tx) error {
		spare, err := tx.GetService(ctx, "spare")
		if err != nil {
			return err
		}
		spare.TargetPort = 444
		return tx.UpdateService(ctx, &spare)
	}); err != nil {
		t.Fatal(err)
	}

	if err := cs.CoreV1().Services(ns).Delete(ctx, "vendor", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, kube.HubConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[kube.HubConfigKey] = `[["listener", {"name": "amqp", "port": "5672"}]]`
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hubBefore := testutil.ToFloat64(metrics.Repairs.WithLabelValues("hub-configmap"))
	svcBefore := testutil.ToFloat64(metrics.Repairs.WithLabelValues("kubernetes-service"))

	run, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "drift-kube", TaskQueue: taskQueue},
		workflows.DriftWorkflowName, reconcile.DriftCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("drift check: %v", err)
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, "vendor", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted Kubernetes Service was not recreated: %v", err)
	}
	if got := hubPairs(t, cs, ns); len(got) != len(want) || got["tcpListener/vendor-listener"] != want["tcpListener/vendor-listener"] ||
		got["tcpConnector/vendor-connector"] != want["tcpConnector/vendor-connector"] {
		t.Errorf("hub pairs after the drift check %v, want %v", got, want)
	}
	if got := hubPairs(t, cs, ns)["tcpConnector/spare-connector"]; !strings.Contains(got, `"444"`) {
		t.Errorf("spare's connector after the drift check %s, want its edited port 444", got)
	}
	if d := testutil.ToFloat64(metrics.Repairs.WithLabelValues("hub-configmap")) - hubBefore; d != 1 {
		t.Errorf("hub ConfigMap repairs counted %v, want 1 (vendor's, not spare's edit)", d)
	}
	if d := testutil.ToFloat64(metrics.Repairs.WithLabelValues("kubernetes-service")) - svcBefore; d != 1 {
		t.Errorf("Kubernetes Service repairs counted %v, want 1", d)
	}
}
