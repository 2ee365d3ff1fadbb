package kube

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"svcbridge/service"
)

func TestPlanService(t *testing.T) {
	cfg := Config{Namespace: "ns"}
	port, lb, clusterIP := 80, "LoadBalancer", "ClusterIP"
	svc := func(typ string, k8sType *string) *service.Service {
		return &service.Service{Spec: service.Spec{Name: "checkout", Type: typ, Tags: checkoutTags, ServicePort: &port, K8sType: k8sType},
			BridgePort: 10024}
	}
	// live is the Service as the server stores the one desired.
	live := func(k8sType string, change func(*corev1.Service)) *corev1.Service {
		s := withServerDefaults(BuildService(cfg, "checkout", 80, 10024, k8sType, checkoutTags, nil))
		s.ResourceVersion, s.UID = "7", "uid-1"
		if change != nil {
			change(s)
		}
		return s
	}
	foreign := live(clusterIP, func(s *corev1.Service) { s.Labels = map[string]string{LabelManagedBy: "Helm"} })
	otherInstance := live(clusterIP, func(s *corev1.Service) { s.Labels[LabelInstance] = "other" })
	cases := []struct {
		name   string
		svc    *service.Service
		live   *corev1.Service
		action ServiceAction
		poll   bool
		err    error
	}{
		{"deleted, none left", nil, nil, ServiceKeep, false, nil},
		{"deleted: ours goes", nil, live(clusterIP, nil), ServiceDelete, false, nil},
		{"deleted: a foreign one stays", nil, foreign, ServiceKeep, false, nil},
		{"k8s: ours goes", svc(service.TypeK8s, nil), live(clusterIP, nil), ServiceDelete, false, nil},
		{"k8s: another instance's stays", svc(service.TypeK8s, nil), otherInstance, ServiceKeep, false, nil},
		{"LoadBalancer, none yet", svc(service.TypeMicroservice, &lb), nil, ServiceCreate, true, nil},
		{"ClusterIP, none yet", svc(service.TypeExternal, &clusterIP), nil, ServiceCreate, false, nil},
		{"ours up to date", svc(service.TypeAgent, &lb), live(lb, nil), ServiceKeep, true, nil},
		{"ours of another type", svc(service.TypeAgent, &lb), live(clusterIP, nil), ServicePatch, true, nil},
		{"ours edited by hand", svc(service.TypeAgent, &clusterIP),
			live(clusterIP, func(s *corev1.Service) { s.Annotations["human"] = "was here" }), ServicePatch, false, nil},
		{"foreign", svc(service.TypeMicroservice, &clusterIP), foreign, ServiceRefuse, false, nil},
		{"another instance's", svc(service.TypeMicroservice, &lb), otherInstance, ServiceRefuse, true, nil},
		{"no k8sType", svc(service.TypeMicroservice, nil), nil, ServiceKeep, false, ErrIncompleteService},
		{"no servicePort", &service.Service{Spec: service.Spec{Type: service.TypeAgent, K8sType: &lb}}, nil, ServiceKeep, false, ErrIncompleteService},
	}
	for _, c := range cases {
		got, err := PlanService(cfg, "checkout", c.svc, c.live)
		if !errors.Is(err, c.err) || got.Action != c.action || got.PollIngress != c.poll || got.Live != c.live {
			t.Errorf("%s: PlanService = action %v poll %v live %v, %v; want %v %v, %v", c.name, got.Action, got.PollIngress,
				got.Live != nil, err, c.action, c.poll, c.err)
		}
		// What is created or patched is what BuildService builds.
		wantDesired := c.action == ServiceCreate || c.action == ServicePatch
		if wantDesired && (got.Desired == nil || got.Desired.Name != "checkout" || string(got.Desired.Spec.Type) != *c.svc.K8sType) {
			t.Errorf("%s: desired %+v", c.name, got.Desired)
		}
		if (c.svc == nil || c.svc.Type == service.TypeK8s) && got.Desired != nil {
			t.Errorf("%s: a Kubernetes Service is wanted: %+v", c.name, got.Desired)
		}
	}
}
