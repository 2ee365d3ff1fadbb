package meshtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"svcbridge/kube"
	"svcbridge/kube/kubetest"
	"svcbridge/proctest"
	"svcbridge/routertest"
)

// TestMain stops the kube-apiserver and etcd a test started.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.Stop()
	os.Exit(code)
}

// TestMeshKubernetesHub: on a Kubernetes control plane (a real
// kube-apiserver), the hub router's bridges come from the ConfigMap
// iofog-router, key skrouterd.json, which also is its start-up file (as a
// mounted ConfigMap is): a router-sync watching the ConfigMap applies what
// svcbridge writes there. A k8s service (a cluster DNS name, dialled by the
// hub's connector) reaches an edge agent the tags select; a microservice
// service behind the edge agent reaches the hub's clients at its bridge
// port, and gets its Kubernetes Service from servicePort to that port.
func TestMeshKubernetesHub(t *testing.T) {
	cs := kubetest.Client(t)
	ctx := context.Background()
	m := New(t)
	ext := m.Host("ext", nil)
	hub := m.Host("hub", map[string]string{"payments.payments.svc.cluster.local": ext.IP})
	edge := m.Host("edge1", map[string]string{"orders.checkout": "127.0.0.2"})
	ext.Echo("0.0.0.0:8080", "payments@ext:")
	edge.Echo("127.0.0.2:8080", "checkout@edge1:")

	// The hub's start-up configuration, as an installation (the chart)
	// writes it into the ConfigMap: the router listens for management on
	// its pod address, for edge routers on 45671.
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "svcbridge-mesh-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startup := `[
  ["router", {"id": "hub", "mode": "interior"}],
  ["listener", {"name": "amqp", "host": "0.0.0.0", "port": "5672", "role": "normal"}],
  ["listener", {"name": "edge", "host": "0.0.0.0", "port": "45671", "role": "edge"}]
]`
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: kube.HubConfigMapName},
		Data:       map[string]string{kube.HubConfigKey: startup},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kubetest.Kubeconfig(t), 0o600); err != nil {
		t.Fatal(err)
	}
	mounted := filepath.Join(t.TempDir(), "skrouterd.json")
	if err := os.WriteFile(mounted, []byte(startup), 0o644); err != nil {
		t.Fatal(err)
	}
	routertest.Start(t, "hub", routertest.Binary(t), mounted, hub.Wrap()...)
	mgmt := fmt.Sprintf("%s:%d", hub.IP, ManagementPort)
	routertest.WaitPort(t, routertest.Loopback, mgmt, 15*time.Second)
	proctest.Start(t, "hub router-sync", []string{"KUBECONFIG=" + kubeconfig},
		proctest.Svcbridge(t), "router-sync", "--configmap", ns.Name+"/"+kube.HubConfigMapName, "--router", mgmt)

	p := StartPlane(t, m, "CONTROL_PLANE=kubernetes", "CONTROLLER_NAMESPACE="+ns.Name, "KUBECONFIG="+kubeconfig)
	// The hub as an agent: where edge routers dial it.
	p.Agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": hub.IP})
	token := p.Agent(map[string]any{"name": "edge1", "routerMode": "edge", "host": edge.IP, "upstreamRouters": []string{"hub"},
		"tags": []string{tagPrefix + "payments"}})
	StartNode(t, edge, p, token)
	f := &fleet{t: t, m: m, p: p, hub: hub, edge1: edge}

	payments := f.service(map[string]any{"name": "payments", "type": "k8s", "resource": "payments.payments.svc.cluster.local",
		"targetPort": 8080, "tags": []string{"payments"}})
	p.Call(http.MethodPost, "/microservices", map[string]any{"application": "orders", "name": "checkout", "agent": "edge1"}, http.StatusCreated, nil)
	checkout := f.service(map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080,
		"k8sType": "ClusterIP", "servicePort": 80})

	bytesFrom := func(h *Host, port int, want string) {
		t.Helper()
		proctest.WaitFor(t, fmt.Sprintf("%s from %s at %d", want, h.Name, port), follows, func() (bool, string) {
			got, err := h.RoundTrip(port, "ping")
			return got == want+"ping", fmt.Sprintf("%q %v", got, err)
		})
	}
	bytesFrom(edge, payments, "payments@ext:")
	bytesFrom(hub, payments, "payments@ext:")
	bytesFrom(hub, checkout, "checkout@edge1:")
	svc, err := cs.CoreV1().Services(ns.Name).Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if port := svc.Spec.Ports[0]; port.Port != 80 || port.TargetPort.IntValue() != checkout {
		t.Errorf("checkout's Kubernetes Service forwards %d to %s, want 80 to %d", port.Port, port.TargetPort.String(), checkout)
	}

	// A delete leaves the ConfigMap, and the sync the hub router.
	p.Call(http.MethodDelete, "/services/payments", nil, http.StatusNoContent, nil)
	proctest.WaitFor(t, "payments gone from the hub router", follows, func() (bool, string) {
		_, err := hub.RoundTrip(payments, "ping")
		return Refused(err), fmt.Sprint(err)
	})
	bytesFrom(hub, checkout, "checkout@edge1:")
}
