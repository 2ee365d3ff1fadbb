package service

import (
	"fmt"
	"strings"
	"testing"
)

const reservedMessage = `Service name cannot be "controller" or "router" or "router-internal" or "docker" or "podman" or "kubernetes" or "nats" or "nats-headless" or "nats-server"`

// validSpec is a microservice Service valid on both control planes.
func validSpec() Spec {
	return Spec{
		Name: "checkout", Tags: []string{"checkout"}, Type: TypeMicroservice, Resource: "orders/checkout",
		TargetPort: 8080, DefaultBridge: DefaultBridge, ServicePort: ptr(80), K8sType: ptr("LoadBalancer"),
	}
}

func TestValidate(t *testing.T) {
	remote, kube := ControlPlaneRemote, ControlPlaneKubernetes
	tests := []struct {
		name   string
		plane  ControlPlane
		change func(*Spec)
		want   string
	}{
		{"valid on remote", remote, func(*Spec) {}, ""},
		{"valid on kubernetes", kube, func(*Spec) {}, ""},
		{"control plane compared case-insensitively", "Kubernetes", func(s *Spec) { s.Type = TypeK8s; s.Resource = "a.b" }, ""},

		// name
		{"name uppercase", remote, func(s *Spec) { s.Name = "Checkout" }, "Invalid format for field 'name'"},
		{"name leading dash", remote, func(s *Spec) { s.Name = "-a" }, "Invalid format for field 'name'"},
		{"name trailing dash", remote, func(s *Spec) { s.Name = "a-" }, "Invalid format for field 'name'"},
		{"name with dot", remote, func(s *Spec) { s.Name = "a.b" }, "Invalid format for field 'name'"},
		{"name with underscore", remote, func(s *Spec) { s.Name = "a_b" }, "Invalid format for field 'name'"},
		{"name empty", remote, func(s *Spec) { s.Name = "" }, "Invalid format for field 'name'"},
		{"name single char", remote, func(s *Spec) { s.Name = "a" }, ""},
		{"name digits and dashes", remote, func(s *Spec) { s.Name = "1-2-3" }, ""},
		{"name 63 chars", remote, func(s *Spec) { s.Name = strings.Repeat("a", 63) }, ""},
		{"name 64 chars", remote, func(s *Spec) { s.Name = strings.Repeat("a", 64) },
			"Invalid length for field 'name': must be at most 63 characters"},
		{"name reserved controller", remote, func(s *Spec) { s.Name = "controller" }, reservedMessage},
		{"name reserved router-internal", remote, func(s *Spec) { s.Name = "router-internal" }, reservedMessage},
		{"name reserved nats-server", remote, func(s *Spec) { s.Name = "nats-server" }, reservedMessage},
		{"name reserved kubernetes", remote, func(s *Spec) { s.Name = "kubernetes" }, reservedMessage},
		{"name near a reserved one", remote, func(s *Spec) { s.Name = "routers" }, ""},

		// enums
		{"type unknown", remote, func(s *Spec) { s.Type = "pod" }, "Field type is not one of enum values: microservice,k8s,agent,external"},
		{"type empty", remote, func(s *Spec) { s.Type = "" }, "Field type is not one of enum values: microservice,k8s,agent,external"},
		{"type is case-sensitive", remote, func(s *Spec) { s.Type = "Agent" }, "Field type is not one of enum values: microservice,k8s,agent,external"},
		{"k8sType unknown", remote, func(s *Spec) { s.K8sType = ptr("ExternalName") }, "Field k8sType is not one of enum values: LoadBalancer,ClusterIP,NodePort"},
		{"k8sType absent on remote", remote, func(s *Spec) { s.K8sType = nil }, ""},
		{"k8sType given on remote is allowed", remote, func(s *Spec) { s.K8sType = ptr("NodePort") }, ""},

		// ports
		{"targetPort zero", remote, func(s *Spec) { s.TargetPort = 0 }, "Field 'targetPort' must be between 1 and 65535"},
		{"targetPort negative", remote, func(s *Spec) { s.TargetPort = -1 }, "Field 'targetPort' must be between 1 and 65535"},
		{"targetPort too big", remote, func(s *Spec) { s.TargetPort = 65536 }, "Field 'targetPort' must be between 1 and 65535"},
		{"targetPort 1", remote, func(s *Spec) { s.TargetPort = 1 }, ""},
		{"targetPort 65535", remote, func(s *Spec) { s.TargetPort = 65535 }, ""},
		{"servicePort zero", kube, func(s *Spec) { s.ServicePort = ptr(0) }, "Field 'servicePort' must be between 1 and 65535"},
		{"servicePort too big", remote, func(s *Spec) { s.ServicePort = ptr(70000) }, "Field 'servicePort' must be between 1 and 65535"},
		{"servicePort absent on remote", remote, func(s *Spec) { s.ServicePort = nil }, ""},

		// control plane
		{"k8s type on remote", remote, func(s *Spec) { s.Type = TypeK8s; s.Resource = "a.b" },
			"Kubernetes environment is required for k8s service type"},
		{"k8s type on kubernetes needs no k8sType or servicePort", kube, func(s *Spec) {
			s.Type, s.Resource, s.K8sType, s.ServicePort = TypeK8s, "a.b", nil, nil
		}, ""},
		{"microservice on kubernetes without k8sType", kube, func(s *Spec) { s.K8sType = nil },
			"Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port: required field 'k8sType' (one of LoadBalancer, ClusterIP, NodePort) is missing: on the Kubernetes control plane a service of type microservice gets a Kubernetes Service"},
		{"agent on kubernetes without servicePort", kube, func(s *Spec) { s.Type, s.Resource, s.ServicePort = TypeAgent, "fog-a", nil },
			"Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port: required field 'servicePort' (the Kubernetes Service's port) is missing: on the Kubernetes control plane a service of type agent gets a Kubernetes Service"},
		{"external on kubernetes without both", kube, func(s *Spec) { s.Type, s.Resource, s.ServicePort, s.K8sType = TypeExternal, "a.b", nil, nil },
			"Kubernetes environment is required for k8s service type(LoadBalancer or ClusterIP or NodePort) and service port: required fields 'k8sType' (one of LoadBalancer, ClusterIP, NodePort) and 'servicePort' (the Kubernetes Service's port) are missing: on the Kubernetes control plane a service of type external gets a Kubernetes Service"},
		{"unknown control plane is remote", "", func(s *Spec) { s.Type = TypeK8s; s.Resource = "a.b" },
			"Kubernetes environment is required for k8s service type"},

		// resource
		{"resource empty", remote, func(s *Spec) { s.Resource = "" }, "Field 'resource' must not be empty"},
		{"microservice uuid", remote, func(s *Spec) { s.Resource = "11111111-1111-1111-1111-111111111111" }, ""},
		{"microservice app/ms", remote, func(s *Spec) { s.Resource = "orders/checkout" }, ""},
		{"microservice three parts", remote, func(s *Spec) { s.Resource = "orders/checkout/extra" },
			"Invalid resource 'orders/checkout/extra' for type microservice: must be <application>/<microservice> or a microservice uuid"},
		{"microservice empty application", remote, func(s *Spec) { s.Resource = "/checkout" },
			"Invalid resource '/checkout' for type microservice: must be <application>/<microservice> or a microservice uuid"},
		{"microservice empty microservice", remote, func(s *Spec) { s.Resource = "orders/" },
			"Invalid resource 'orders/' for type microservice: must be <application>/<microservice> or a microservice uuid"},
		{"agent name", remote, func(s *Spec) { s.Type, s.Resource = TypeAgent, "fog-a" }, ""},
		{"agent any non-empty", remote, func(s *Spec) { s.Type, s.Resource = TypeAgent, "Fog A/1" }, ""},
		{"external DNS name", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "api.vendor.example" }, ""},
		{"external IPv4", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "203.0.113.10" }, ""},
		{"external IPv6", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "2001:db8::1" }, ""},
		{"external IPv6 with zone", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "fe80::1%eth0" },
			"Invalid resource 'fe80::1%eth0' for type external: must be a DNS name or an IP address"},
		{"external URL", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "http://vendor.example" },
			"Invalid resource 'http://vendor.example' for type external: must be a DNS name or an IP address"},
		{"external host:port", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "vendor.example:443" },
			"Invalid resource 'vendor.example:443' for type external: must be a DNS name or an IP address"},
		{"external with space", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "a b" },
			"Invalid resource 'a b' for type external: must be a DNS name or an IP address"},
		{"external uppercase", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "Vendor.Example" },
			"Invalid resource 'Vendor.Example' for type external: must be a DNS name or an IP address"},
		{"external too long", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, strings.Repeat("a.", 127)+"a" },
			"Invalid resource '" + strings.Repeat("a.", 127) + "a' for type external: must be a DNS name or an IP address"},
		{"k8s cluster DNS name", kube, func(s *Spec) { s.Type, s.Resource = TypeK8s, "payments.payments.svc.cluster.local" }, ""},
		{"k8s bad host", kube, func(s *Spec) { s.Type, s.Resource = TypeK8s, "payments..svc" },
			"Invalid resource 'payments..svc' for type k8s: must be a DNS name or an IP address"},

		// defaultBridge
		{"defaultBridge empty means default-router", remote, func(s *Spec) { s.DefaultBridge = "" }, ""},
		{"microservice custom bridge", remote, func(s *Spec) { s.DefaultBridge = "22222222-2222-2222-2222-222222222222" }, ""},
		{"agent custom bridge", remote, func(s *Spec) { s.Type, s.Resource, s.DefaultBridge = TypeAgent, "fog-a", "fog-b-uuid" }, ""},
		{"external custom bridge", remote, func(s *Spec) { s.Type, s.Resource, s.DefaultBridge = TypeExternal, "a.b", "fog-b" },
			"Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'fog-b'"},
		{"k8s custom bridge", kube, func(s *Spec) { s.Type, s.Resource, s.DefaultBridge = TypeK8s, "a.b", "x" },
			"Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'x'"},
		{"external default bridge", remote, func(s *Spec) { s.Type, s.Resource = TypeExternal, "a.b" }, ""},

		// tags
		{"no tags", remote, func(s *Spec) { s.Tags = nil }, ""},
		{"one key twice is fine", kube, func(s *Spec) { s.Tags = []string{"a", "k: v", "k: w"} }, ""},
		{"duplicated tags", kube, func(s *Spec) { s.Tags = []string{"a", "k: v", "a"} }, `Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
		{"64 tags", remote, func(s *Spec) { s.Tags = numberedTags(MaxTags) }, ""},
		{"65 tags", remote, func(s *Spec) { s.Tags = numberedTags(MaxTags + 1) }, "Field 'tags' has 65 tags, more than the limit of 64"},
		{"invisible character in a tag", remote, func(s *Spec) { s.Tags = []string{"a\u2066b"} }, "Field 'tags[0]' contains an invisible format character (U+2066)"},
		{"empty tag", remote, func(s *Spec) { s.Tags = []string{"a", ""} }, "Field 'tags[1]' must not be empty or blank"},
		{"blank tag", remote, func(s *Spec) { s.Tags = []string{"  "} }, "Field 'tags[0]' must not be empty or blank"},
		{"tag at the length limit", remote, func(s *Spec) { s.Tags = []string{strings.Repeat("t", MaxTagLength)} }, ""},
		{"tag too long", remote, func(s *Spec) { s.Tags = []string{"a", strings.Repeat("t", MaxTagLength+1)} },
			"Field 'tags[1]' is longer than 1024 characters"},
		{"bad annotation tag on remote is fine", remote, func(s *Spec) { s.Tags = []string{"not a key"} }, ""},
		{"bad annotation tag on kubernetes", kube, func(s *Spec) { s.Tags = []string{"ok", "not a key"} },
			"Invalid tag 'not a key': name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
		{"bad annotation tag on kubernetes for type k8s is fine", kube, func(s *Spec) {
			s.Type, s.Resource, s.Tags = TypeK8s, "a.b", []string{"not a key"}
		}, ""},
		{"aws annotation tag on kubernetes", kube, func(s *Spec) {
			s.Tags = []string{"service.beta.kubernetes.io/aws-load-balancer-type: nlb"}
		}, ""},

		// order: first failure wins
		{"name before type", remote, func(s *Spec) { s.Name, s.Type = "X", "x" }, "Invalid format for field 'name'"},
		{"type before port", remote, func(s *Spec) { s.Type, s.TargetPort = "x", 0 }, "Field type is not one of enum values: microservice,k8s,agent,external"},
		{"k8sType before port", remote, func(s *Spec) { s.K8sType, s.TargetPort = ptr("x"), 0 }, "Field k8sType is not one of enum values: LoadBalancer,ClusterIP,NodePort"},
		{"port before control plane", remote, func(s *Spec) { s.Type, s.Resource, s.TargetPort = TypeK8s, "a.b", 0 }, "Field 'targetPort' must be between 1 and 65535"},
		{"control plane before resource", remote, func(s *Spec) { s.Type, s.Resource = TypeK8s, "" }, "Kubernetes environment is required for k8s service type"},
		{"resource before defaultBridge", remote, func(s *Spec) { s.Type, s.Resource, s.DefaultBridge = TypeExternal, "", "x" }, "Field 'resource' must not be empty"},
		{"defaultBridge before tags", remote, func(s *Spec) { s.Type, s.Resource, s.DefaultBridge, s.Tags = TypeExternal, "a.b", "x", []string{""} },
			"Invalid default bridge, If service type is not microservice, defaultBridge must be default-router'x'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.change(&s)
			wantMessage(t, Validate(s, tt.plane), tt.want)
		})
	}
}

func numberedTags(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

func repeatTag(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = tag
	}
	return out
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"nothing changed", func(*Spec) {}, ""},
		{"mutable fields changed", func(s *Spec) {
			s.Resource, s.TargetPort, s.Tags, s.ServicePort, s.K8sType = "orders/other", 1, nil, ptr(81), ptr("ClusterIP")
		}, ""},
		{"empty defaultBridge equals default-router", func(s *Spec) { s.DefaultBridge = "" }, ""},
		{"name changed", func(s *Spec) { s.Name = "other" },
			"Changing service name is not allowed. Please delete the service and create a new one with the desired name."},
		{"type changed", func(s *Spec) { s.Type = TypeAgent },
			"Changing service type is not allowed. Please delete the service and create a new one with the desired type."},
		{"defaultBridge changed", func(s *Spec) { s.DefaultBridge = "fog-b-uuid" },
			"Changing default bridge is not allowed. Please delete the service and create a new one with the desired default bridge."},
		{"type checked before defaultBridge", func(s *Spec) { s.Type, s.DefaultBridge = TypeAgent, "x" },
			"Changing service type is not allowed. Please delete the service and create a new one with the desired type."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := validSpec(), validSpec()
			tt.change(&new)
			wantMessage(t, ValidateUpdate(old, new), tt.want)
		})
	}
}

func TestJSONPatchWithoutTypeOrBridgeKeepsImmutables(t *testing.T) {
	old := validSpec()
	p, err := DecodeJSON([]byte(`{"name":"checkout","targetPort":9090}`))
	wantMessage(t, err, "")
	new := p.Apply(old)
	wantMessage(t, ValidateUpdate(old, new), "")
	wantMessage(t, Validate(new, ControlPlaneKubernetes), "")
}

func TestSameSpec(t *testing.T) {
	base := Spec{Name: "a", Tags: []string{"x", "y"}, Type: TypeK8s, Resource: "r", TargetPort: 80, DefaultBridge: DefaultBridge,
		ServicePort: ptr(80), K8sType: ptr("ClusterIP"), Kubernetes: &Kubernetes{Annotations: map[string]string{"k": "v"}}}
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		same   bool
	}{
		{"itself", func(*Spec) {}, true},
		{"a copy of its pointers", func(s *Spec) { s.ServicePort, s.K8sType = ptr(80), ptr("ClusterIP") }, true},
		{"a copy of its block", func(s *Spec) { s.Kubernetes = &Kubernetes{Annotations: map[string]string{"k": "v"}} }, true},
		{"an empty option as absent", func(s *Spec) { s.Kubernetes.Labels = map[string]string{} }, true},
		{"another port", func(s *Spec) { s.TargetPort = 81 }, false},
		{"another resource", func(s *Spec) { s.Resource = "q" }, false},
		{"servicePort removed", func(s *Spec) { s.ServicePort = nil }, false},
		{"another annotation", func(s *Spec) { s.Kubernetes = &Kubernetes{Annotations: map[string]string{"k": "w"}} }, false},
		{"block removed", func(s *Spec) { s.Kubernetes = nil }, false},
		{"tags reordered", func(s *Spec) { s.Tags = []string{"y", "x"} }, false},
		{"a tag less", func(s *Spec) { s.Tags = []string{"x"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			b.Kubernetes = &Kubernetes{Annotations: map[string]string{"k": "v"}}
			tc.change(&b)
			if got := SameSpec(base, b); got != tc.same {
				t.Fatalf("SameSpec = %v, want %v", got, tc.same)
			}
		})
	}
	// No tags are no tags, however held.
	if !SameSpec(Spec{Name: "a"}, Spec{Name: "a", Tags: []string{}}) {
		t.Fatal("nil and empty tags differ")
	}
}

func TestWithDefaults(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", DefaultBridge},
		{DefaultBridge, DefaultBridge},
		{"22222222-2222-2222-2222-222222222222", "22222222-2222-2222-2222-222222222222"},
	} {
		if got := (Spec{DefaultBridge: c.in}).WithDefaults().DefaultBridge; got != c.want {
			t.Errorf("defaultBridge %q stored as %q, want %q", c.in, got, c.want)
		}
	}
}
