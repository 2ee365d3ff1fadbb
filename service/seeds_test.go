package service

import (
	"reflect"
	"testing"
)

// The three YAML examples of seed 000, each on the control plane it targets.
var seedYAMLs = []struct {
	name, doc string
	plane     ControlPlane
	want      Spec
}{
	{
		name:  "remote microservice",
		plane: ControlPlaneRemote,
		doc: `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout          # distribution token; matched against agent tags
spec:
  type: microservice
  resource: orders/checkout    # <application>/<microservice>, or a microservice uuid
  targetPort: 8080
  defaultBridge: default-router
`,
		want: Spec{Name: "checkout", Tags: []string{"checkout"}, Type: TypeMicroservice,
			Resource: "orders/checkout", TargetPort: 8080, DefaultBridge: DefaultBridge},
	},
	{
		name:  "kubernetes microservice with an annotation tag",
		plane: ControlPlaneKubernetes,
		doc: `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout
    # contains ":", so this is a Kubernetes annotation only, not a distribution tag
    - "service.beta.kubernetes.io/aws-load-balancer-type: nlb"
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  servicePort: 80
  k8sType: LoadBalancer
  defaultBridge: default-router
`,
		want: Spec{Name: "checkout", Tags: []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"},
			Type: TypeMicroservice, Resource: "orders/checkout", TargetPort: 8080, DefaultBridge: DefaultBridge,
			ServicePort: ptr(80), K8sType: ptr("LoadBalancer")},
	},
	{
		name:  "kubernetes k8s backend",
		plane: ControlPlaneKubernetes,
		doc: `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: payments
  tags:
    - payments
spec:
  type: k8s
  resource: payments.payments.svc.cluster.local
  targetPort: 8080
  defaultBridge: default-router
`,
		want: Spec{Name: "payments", Tags: []string{"payments"}, Type: TypeK8s,
			Resource: "payments.payments.svc.cluster.local", TargetPort: 8080, DefaultBridge: DefaultBridge},
	},
}

func TestSeedYAMLExamplesDecodeAndValidate(t *testing.T) {
	for _, tt := range seedYAMLs {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeYAML([]byte(tt.doc))
			wantMessage(t, err, "")
			wantMessage(t, p.RequireCreate(), "")
			s := p.Apply(Spec{})
			if !reflect.DeepEqual(s, tt.want) {
				t.Fatalf("got %+v\nwant %+v", s, tt.want)
			}
			wantMessage(t, Validate(s, tt.plane), "")
			wantMessage(t, CheckYAMLName(p, tt.want.Name), "")
		})
	}
}

// Seed 000: the Kubernetes example without k8sType/servicePort is rejected
// there, and type k8s is rejected on a remote control plane.
func TestSeedYAMLExamplesOnTheOtherControlPlane(t *testing.T) {
	p, _ := DecodeYAML([]byte(seedYAMLs[0].doc))
	wantMessage(t, Validate(p.Apply(Spec{}), ControlPlaneKubernetes),
		"Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port: required fields 'k8sType' (one of LoadBalancer, ClusterIP, NodePort) and 'servicePort' (the Kubernetes Service's port) are missing: on the Kubernetes control plane a service of type microservice gets a Kubernetes Service")
	p, _ = DecodeYAML([]byte(seedYAMLs[2].doc))
	wantMessage(t, Validate(p.Apply(Spec{}), ControlPlaneRemote),
		"Kubernetes environment is required for k8s service type")
}

// Seed 000: the Kubernetes example's tags become the worked object's
// annotations, and only "checkout" distributes.
func TestSeedKubernetesExampleTags(t *testing.T) {
	p, _ := DecodeYAML([]byte(seedYAMLs[1].doc))
	want := map[string]string{"checkout": "", "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
	if got := Annotations(*p.Tags); !reflect.DeepEqual(got, want) {
		t.Fatalf("annotations = %q, want %q", got, want)
	}
	if got := rule.SelectingAgentTags(*p.Tags); !reflect.DeepEqual(got, []string{"service.iofog.org/tag: all", "service.iofog.org/tag: checkout"}) {
		t.Fatalf("agent tags = %q", got)
	}
}
