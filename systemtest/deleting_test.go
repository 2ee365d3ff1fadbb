package systemtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"svcbridge/service"
)

// TestDeletingUntilObjectsGone: a deleted service shows as deleting, in
// GET and in the list, while its router entries remain, and is a 404 once
// a worker removed them; its name can be taken again meanwhile.
func TestDeletingUntilObjectsGone(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 0)
		w := s.startWorker()
		newFleet(s)
		checkout := map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}
		s.must(http.StatusCreated, "POST", "/api/v3/services", checkout, nil)
		s.waitStatus("checkout", service.StatusReady)

		// With no worker, the objects stay where they are.
		w.Stop()
		s.must(http.StatusNoContent, "DELETE", "/api/v3/services/checkout", nil, nil)
		wantDeleting := func() {
			t.Helper()
			got, found := s.getService("checkout")
			if !found || got.ProvisioningStatus != service.StatusDeleting {
				t.Fatalf("GET after DELETE: found %v status %q, want deleting", found, got.ProvisioningStatus)
			}
			if listeners, _ := s.bridges("hub"); listeners["checkout-listener"] == nil {
				t.Fatal("the hub's listener went without a worker")
			}
			if list := s.listStatuses(); list["checkout"] != service.StatusDeleting {
				t.Fatalf("list shows checkout as %q, want deleting", list["checkout"])
			}
		}
		wantDeleting()
		s.must(http.StatusAccepted, "POST", "/api/v3/services/checkout/reconcile", nil, nil)
		s.must(http.StatusNotFound, "PATCH", "/api/v3/services/checkout", map[string]any{"targetPort": 9090}, nil)

		// The name is free: re-creating it works as before, and deleting
		// it again leaves it deleting.
		var again serviceOut
		s.must(http.StatusCreated, "POST", "/api/v3/services", checkout, &again)
		if again.ProvisioningStatus != service.StatusPending {
			t.Fatalf("re-created service is %q, want pending", again.ProvisioningStatus)
		}
		if got, _ := s.getService("checkout"); got.ProvisioningStatus != service.StatusPending || got.Type != "microservice" {
			t.Fatalf("GET of the re-created service: %+v", got)
		}
		s.must(http.StatusNoContent, "DELETE", "/api/v3/services/checkout", nil, nil)
		wantDeleting()

		// A worker removes the objects; then the service is gone.
		// Work the stopped worker had in flight is retried only after its
		// activity's timeout, so allow for that.
		s.startWorker()
		s.waitFor("checkout gone", 2*time.Minute, func() (bool, string) {
			got, found := s.getService("checkout")
			return !found, got.ProvisioningStatus
		})
		if listeners, _ := s.bridges("hub"); listeners["checkout-listener"] != nil {
			t.Error("the hub still listens for checkout after its 404")
		}
		if list := s.listStatuses(); len(list) != 0 {
			t.Errorf("list after the delete finished: %v", list)
		}
	})
}

// listStatuses lists the services as name → provisioningStatus.
func (s *system) listStatuses() map[string]string {
	s.t.Helper()
	var svcs []serviceOut
	s.must(http.StatusOK, "GET", "/api/v3/services", nil, &svcs)
	out := map[string]string{}
	for _, svc := range svcs {
		out[svc.Name] = svc.ProvisioningStatus
	}
	return out
}

// TestKubernetesDeletingUntilClusterObjectsGone: on the Kubernetes control
// plane a deleted service's objects are in the cluster (its Service, its
// hub pairs), not in agents' routers; it shows as deleting until a worker
// removed them, then it is a 404.
func TestKubernetesDeletingUntilClusterObjectsGone(t *testing.T) {
	s, cs, ns := kubeSystem(t)
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{"name": "pay", "type": "external",
		"resource": "203.0.113.10", "targetPort": 443, "servicePort": 443, "k8sType": "ClusterIP"}, nil)
	s.waitStatus("pay", service.StatusReady)

	for _, w := range s.workers {
		w.Stop()
	}
	s.must(http.StatusNoContent, "DELETE", "/api/v3/services/pay", nil, nil)
	if got, found := s.getService("pay"); !found || got.ProvisioningStatus != service.StatusDeleting {
		t.Fatalf("GET after DELETE with its Kubernetes Service in place: found %v status %q, want deleting", found, got.ProvisioningStatus)
	}
	if _, err := cs.CoreV1().Services(ns).Get(context.Background(), "pay", metav1.GetOptions{}); err != nil {
		t.Fatalf("the Kubernetes Service went without a worker: %v", err)
	}

	s.startWorker()
	s.waitFor("pay gone", 2*time.Minute, func() (bool, string) {
		_, found := s.getService("pay")
		return !found, "still found"
	})
	if _, err := cs.CoreV1().Services(ns).Get(context.Background(), "pay", metav1.GetOptions{}); err == nil {
		t.Error("pay is a 404 while its Kubernetes Service remains")
	}
	if p := hubPairs(t, cs, ns); p["tcpListener/pay-listener"] != "" || p["tcpConnector/pay-connector"] != "" {
		t.Errorf("pay is a 404 while its hub pairs remain: %v", p)
	}
}
