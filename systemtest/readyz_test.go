package systemtest

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"svcbridge/wire"
)

// On the Kubernetes control plane /readyz reports the kube-apiserver: ok
// while it answers, why not when it does not (without gating: the API
// still stores changes, and agents still pull).
func TestReadyzReportsKubernetes(t *testing.T) {
	s, _, _ := kubeSystem(t)
	var r wire.Readiness
	s.must(http.StatusOK, "GET", "/readyz", nil, &r)
	if r.Kubernetes != "ok" {
		t.Errorf("/readyz kubernetes %q with the kube-apiserver up, want ok", r.Kubernetes)
	}

	// A cluster that does not answer: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: down})
	if err != nil {
		t.Fatal(err)
	}
	s2 := newSystem(t, "sqlite", 1, kubernetesPlane, func(s *system) { s.kube = cs })
	s2.must(http.StatusOK, "GET", "/readyz", nil, &r)
	if !strings.HasPrefix(r.Kubernetes, "unreachable: ") || !strings.Contains(r.Kubernetes, "connection refused") {
		t.Errorf("/readyz kubernetes %q with the kube-apiserver down, want unreachable and why", r.Kubernetes)
	}
}
