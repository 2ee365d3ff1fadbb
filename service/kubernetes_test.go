package service

import (
	"reflect"
	"strings"
	"testing"
)

// The messages are kube-apiserver's own for the same field (v1.34), under
// the field's name in spec.kubernetes.
func TestValidateKubernetes(t *testing.T) {
	kube := ControlPlaneKubernetes
	lb, cip, np := ptr("LoadBalancer"), ptr("ClusterIP"), ptr("NodePort")
	tests := []struct {
		name  string
		plane ControlPlane
		typ   *string
		k     Kubernetes
		tags  []string
		stype string
		want  string
	}{
		{name: "every option on a LoadBalancer", typ: lb, k: Kubernetes{
			LoadBalancerSourceRanges: []string{"10.0.0.0/8", " 2001:db8::/32 "}, ExternalTrafficPolicy: "Local",
			InternalTrafficPolicy: "Local", LoadBalancerClass: ptr("example.com/internal"), SessionAffinity: "ClientIP",
			SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(86400)}},
			IPFamilyPolicy:        "PreferDualStack", IPFamilies: []string{"IPv4", "IPv6"}, AllocateLoadBalancerNodePorts: ptr(false),
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
			Labels:      map[string]string{"team": "payments"}}},
		{name: "remote control plane refuses the block", plane: ControlPlaneRemote, typ: lb, k: Kubernetes{ExternalTrafficPolicy: "Local"},
			want: "Field 'kubernetes' applies only on the Kubernetes control plane (CONTROL_PLANE=kubernetes): the remote control plane creates no Kubernetes Service to set it on"},
		{name: "type k8s has no Kubernetes Service", stype: TypeK8s, typ: nil, k: Kubernetes{InternalTrafficPolicy: "Local"},
			want: "Field 'kubernetes' is not allowed for type k8s: svcbridge creates no Kubernetes Service for it"},

		// loadBalancerSourceRanges
		{name: "not a CIDR", typ: lb, k: Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8", "10.0.0.0/33"}},
			want: `Invalid field 'kubernetes.loadBalancerSourceRanges[1]': Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},
		{name: "an IP is not a CIDR", typ: lb, k: Kubernetes{LoadBalancerSourceRanges: []string{"10.1.2.3"}},
			want: `Invalid field 'kubernetes.loadBalancerSourceRanges[0]': Invalid value: "10.1.2.3": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},
		{name: "host bits set are accepted as Kubernetes does", typ: lb, k: Kubernetes{LoadBalancerSourceRanges: []string{"10.1.2.3/8"}}},
		{name: "source ranges on a ClusterIP", typ: cip, k: Kubernetes{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}},
			want: "Invalid field 'kubernetes.loadBalancerSourceRanges': Forbidden: may only be used when `k8sType` is 'LoadBalancer'"},
		{name: "source ranges annotation checked too", typ: lb, k: Kubernetes{Annotations: map[string]string{SourceRangesAnnotation: "10.0.0.0/8, x"}},
			want: `Invalid field 'kubernetes.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]': Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},

		// traffic policies
		{name: "externalTrafficPolicy unknown", typ: np, k: Kubernetes{ExternalTrafficPolicy: "Nearest"},
			want: `Invalid field 'kubernetes.externalTrafficPolicy': Unsupported value: "Nearest": supported values: "Cluster", "Local"`},
		{name: "externalTrafficPolicy on a NodePort", typ: np, k: Kubernetes{ExternalTrafficPolicy: "Local"}},
		{name: "externalTrafficPolicy on a ClusterIP", typ: cip, k: Kubernetes{ExternalTrafficPolicy: "Local"},
			want: `Invalid field 'kubernetes.externalTrafficPolicy': Invalid value: "Local": may only be set for externally-accessible services (k8sType LoadBalancer or NodePort)`},
		{name: "internalTrafficPolicy on a ClusterIP", typ: cip, k: Kubernetes{InternalTrafficPolicy: "Local"}},
		{name: "internalTrafficPolicy unknown", typ: cip, k: Kubernetes{InternalTrafficPolicy: "local"},
			want: `Invalid field 'kubernetes.internalTrafficPolicy': Unsupported value: "local": supported values: "Cluster", "Local"`},

		// loadBalancerClass, allocateLoadBalancerNodePorts
		{name: "loadBalancerClass on a NodePort", typ: np, k: Kubernetes{LoadBalancerClass: ptr("example.com/lb")},
			want: "Invalid field 'kubernetes.loadBalancerClass': Forbidden: may only be used when `k8sType` is 'LoadBalancer'"},
		{name: "loadBalancerClass not a qualified name", typ: lb, k: Kubernetes{LoadBalancerClass: ptr("a/b/c")},
			want: `Invalid field 'kubernetes.loadBalancerClass': Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{name: "allocateLoadBalancerNodePorts on a ClusterIP", typ: cip, k: Kubernetes{AllocateLoadBalancerNodePorts: ptr(true)},
			want: "Invalid field 'kubernetes.allocateLoadBalancerNodePorts': Forbidden: may only be used when `k8sType` is 'LoadBalancer'"},

		// session affinity
		{name: "ClientIP without config takes the default timeout", typ: cip, k: Kubernetes{SessionAffinity: "ClientIP"}},
		{name: "sessionAffinity unknown", typ: cip, k: Kubernetes{SessionAffinity: "Cookie"},
			want: `Invalid field 'kubernetes.sessionAffinity': Unsupported value: "Cookie": supported values: "ClientIP", "None"`},
		{name: "timeout 0", typ: cip, k: Kubernetes{SessionAffinity: "ClientIP", SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(0)}}},
			want: "Invalid field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds': Invalid value: 0: must be greater than 0 and less than 86400"},
		{name: "timeout 86401", typ: cip, k: Kubernetes{SessionAffinity: "ClientIP", SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(86401)}}},
			want: "Invalid field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds': Invalid value: 86401: must be greater than 0 and less than 86400"},
		{name: "timeout 1", typ: cip, k: Kubernetes{SessionAffinity: "ClientIP", SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(1)}}}},
		{name: "config without ClientIP affinity", typ: cip, k: Kubernetes{SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(5)}}},
			want: "Invalid field 'kubernetes.sessionAffinityConfig': Forbidden: must not be set when session affinity is None"},

		// IP families
		{name: "ipFamilyPolicy unknown", typ: cip, k: Kubernetes{IPFamilyPolicy: "DualStack"},
			want: `Invalid field 'kubernetes.ipFamilyPolicy': Unsupported value: "DualStack": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`},
		{name: "ipFamily unknown", typ: cip, k: Kubernetes{IPFamilies: []string{"IPv5"}},
			want: `Invalid field 'kubernetes.ipFamilies[0]': Unsupported value: "IPv5": supported values: "IPv4", "IPv6"`},
		{name: "ipFamily twice", typ: cip, k: Kubernetes{IPFamilyPolicy: "RequireDualStack", IPFamilies: []string{"IPv6", "IPv6"}},
			want: `Invalid field 'kubernetes.ipFamilies[1]': Duplicate value: "IPv6"`},
		{name: "two families need a dual-stack policy", typ: cip, k: Kubernetes{IPFamilies: []string{"IPv6", "IPv4"}},
			want: `Invalid field 'kubernetes.ipFamilyPolicy': Invalid value: "": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified`},
		{name: "one IPv6 family", typ: cip, k: Kubernetes{IPFamilies: []string{"IPv6"}}},

		// annotations and labels
		{name: "annotation key invalid", typ: lb, k: Kubernetes{Annotations: map[string]string{"not a key": "x"}},
			want: `Invalid field 'kubernetes.annotations': Invalid value: "not a key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{name: "annotation also set by a tag", typ: lb, tags: []string{"owner: a"}, k: Kubernetes{Annotations: map[string]string{"owner": "b"}},
			want: "Invalid field 'kubernetes.annotations[owner]': Forbidden: is also set by a tag: set it in one place"},
		{name: "annotations with tags over the size limit", typ: lb, tags: []string{"big: " + strings.Repeat("x", 1000)},
			k:    Kubernetes{Annotations: map[string]string{"more": strings.Repeat("y", 256<<10-500)}},
			want: "Invalid field 'kubernetes.annotations': Too long: may not be more than 262144 bytes"},
		{name: "label value invalid", typ: lb, k: Kubernetes{Labels: map[string]string{"team": "a b"}},
			want: `Invalid field 'kubernetes.labels': Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{name: "svcbridge's managed-by label", typ: lb, k: Kubernetes{Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}},
			want: "Invalid field 'kubernetes.labels[app.kubernetes.io/managed-by]': Forbidden: is one of svcbridge's own labels"},
		{name: "the router component label", typ: lb, k: Kubernetes{Labels: map[string]string{"example.com/component": "x"}},
			want: "Invalid field 'kubernetes.labels[example.com/component]': Forbidden: is one of svcbridge's own labels"},
		{name: "other app.kubernetes.io labels are fine", typ: lb, k: Kubernetes{Labels: map[string]string{"app.kubernetes.io/part-of": "shop"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			s.K8sType = tc.typ
			s.Tags = tc.tags
			if tc.stype != "" {
				s.Type, s.Resource, s.ServicePort = tc.stype, "a.b", nil
			}
			k := tc.k
			s.Kubernetes = &k
			plane := tc.plane
			if plane == "" {
				plane = kube
			}
			err := Validate(s, plane)
			if got := errString(err); got != tc.want {
				t.Errorf("Validate = %q\nwant       %q", got, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValidateKubernetesUpdate(t *testing.T) {
	withK := func(typ string, k Kubernetes) Spec {
		s := validSpec()
		s.K8sType = ptr(typ)
		s.Kubernetes = &k
		return s
	}
	class := func(c string) Kubernetes { return Kubernetes{LoadBalancerClass: ptr(c)} }
	noBlock := validSpec()
	for _, tc := range []struct {
		name     string
		old, new Spec
		want     string
	}{
		{"same class", withK("LoadBalancer", class("a.io/x")), withK("LoadBalancer", class("a.io/x")), ""},
		{"class changed", withK("LoadBalancer", class("a.io/x")), withK("LoadBalancer", class("a.io/y")),
			`Invalid field 'kubernetes.loadBalancerClass': Invalid value: "a.io/y": may not change once set while k8sType stays LoadBalancer (change k8sType, or delete and create the service)`},
		{"class added", noBlock, withK("LoadBalancer", class("a.io/x")),
			`Invalid field 'kubernetes.loadBalancerClass': Invalid value: "a.io/x": may not change once set while k8sType stays LoadBalancer (change k8sType, or delete and create the service)`},
		{"class removed", withK("LoadBalancer", class("a.io/x")), noBlock,
			"Invalid field 'kubernetes.loadBalancerClass': Invalid value: null: may not change once set while k8sType stays LoadBalancer (change k8sType, or delete and create the service)"},
		{"class added with the type", withK("ClusterIP", Kubernetes{}), withK("LoadBalancer", class("a.io/x")), ""},
		{"primary family changed", withK("ClusterIP", Kubernetes{IPFamilies: []string{"IPv4"}}), withK("ClusterIP", Kubernetes{IPFamilies: []string{"IPv6"}}),
			`Invalid field 'kubernetes.ipFamilies[0]': Invalid value: ["IPv6"]: may not change once set`},
		{"secondary family released without SingleStack",
			withK("ClusterIP", Kubernetes{IPFamilyPolicy: "PreferDualStack", IPFamilies: []string{"IPv4", "IPv6"}}),
			withK("ClusterIP", Kubernetes{IPFamilyPolicy: "PreferDualStack", IPFamilies: []string{"IPv4"}}),
			`Invalid field 'kubernetes.ipFamilyPolicy': Invalid value: "PreferDualStack": must be 'SingleStack' to release the secondary IP family`},
		{"secondary family released with SingleStack",
			withK("ClusterIP", Kubernetes{IPFamilyPolicy: "PreferDualStack", IPFamilies: []string{"IPv4", "IPv6"}}),
			withK("ClusterIP", Kubernetes{IPFamilyPolicy: "SingleStack", IPFamilies: []string{"IPv4"}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(ValidateUpdate(tc.old, tc.new)); got != tc.want {
				t.Errorf("ValidateUpdate = %q\nwant             %q", got, tc.want)
			}
		})
	}
}

func TestDecodeKubernetes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // error
	}{
		{"unknown field", `{"kubernetes":{"externalTrafficPolicyy":"Local"}}`, `Invalid field 'kubernetes': unknown field "externalTrafficPolicyy"`},
		{"unknown nested field", `{"kubernetes":{"sessionAffinityConfig":{"clientIP":{"timeout":1}}}}`, `Invalid field 'kubernetes': unknown field "timeout"`},
		{"not an object", `{"kubernetes":[]}`, "Field 'kubernetes' is not of a type(s) object"},
		{"string list of numbers", `{"kubernetes":{"loadBalancerSourceRanges":[10]}}`, "Field 'kubernetes.loadBalancerSourceRanges' is not of a type(s) string"},
		{"timeout as a string", `{"kubernetes":{"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":"10"}}}}`,
			"Field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds' is not of a type(s) integer"},
		{"fractional timeout", `{"kubernetes":{"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":1.5}}}}`,
			"Field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds' is not of a type(s) integer"},
		{"bool as a string", `{"kubernetes":{"allocateLoadBalancerNodePorts":"false"}}`, "Field 'kubernetes.allocateLoadBalancerNodePorts' is not of a type(s) boolean"},
		{"empty policy", `{"kubernetes":{"externalTrafficPolicy":""}}`, "Field 'kubernetes.externalTrafficPolicy' must not be empty: omit it, or give null to remove it"},
		{"label value a number", `{"kubernetes":{"labels":{"a":1}}}`, "Field 'kubernetes.labels' is not of a type(s) string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeJSON([]byte(tc.body))
			if got := errString(err); got != tc.want {
				t.Errorf("DecodeJSON = %q\nwant         %q", got, tc.want)
			}
		})
	}
}

// A JSON PATCH changes the options it names (null removes one, a null
// block removes all); the YAML document replaces the block.
func TestKubernetesPatchApply(t *testing.T) {
	stored := validSpec()
	stored.Kubernetes = &Kubernetes{ExternalTrafficPolicy: "Local", LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
		Labels: map[string]string{"a": "1", "b": "2"}}
	apply := func(body string) *Kubernetes {
		t.Helper()
		p, err := DecodeJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return p.Apply(stored).Kubernetes
	}
	for _, tc := range []struct {
		name, body string
		want       *Kubernetes
	}{
		{"absent keeps the block", `{"targetPort":81}`, stored.Kubernetes},
		{"one option changes, the rest stay", `{"kubernetes":{"externalTrafficPolicy":"Cluster"}}`,
			&Kubernetes{ExternalTrafficPolicy: "Cluster", LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, Labels: map[string]string{"a": "1", "b": "2"}}},
		{"null removes one option", `{"kubernetes":{"loadBalancerSourceRanges":null}}`,
			&Kubernetes{ExternalTrafficPolicy: "Local", Labels: map[string]string{"a": "1", "b": "2"}}},
		{"a map is replaced whole", `{"kubernetes":{"labels":{"c":"3"}}}`,
			&Kubernetes{ExternalTrafficPolicy: "Local", LoadBalancerSourceRanges: []string{"10.0.0.0/8"}, Labels: map[string]string{"c": "3"}}},
		{"null block removes all", `{"kubernetes":null}`, nil},
		{"removing the last option leaves no block", `{"kubernetes":{"externalTrafficPolicy":null,"loadBalancerSourceRanges":null,"labels":null}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apply(tc.body); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kubernetes = %+v, want %+v", got, tc.want)
			}
		})
	}
	if stored.Kubernetes.ExternalTrafficPolicy != "Local" || len(stored.Kubernetes.Labels) != 2 {
		t.Errorf("Apply changed the stored spec: %+v", stored.Kubernetes)
	}

	yamlDoc := "kind: Service\nmetadata:\n  name: checkout\nspec:\n  type: microservice\n  resource: orders/checkout\n  targetPort: 8080\n" +
		"  kubernetes:\n    sessionAffinity: ClientIP\n    sessionAffinityConfig:\n      clientIP:\n        timeoutSeconds: 60\n"
	p, err := DecodeYAML([]byte(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := &Kubernetes{SessionAffinity: "ClientIP", SessionAffinityConfig: &SessionAffinityConfig{ClientIP: &ClientIPConfig{TimeoutSeconds: ptr(60)}}}
	if got := p.Apply(Spec{Tags: []string{}}).Kubernetes; !reflect.DeepEqual(got, want) {
		t.Errorf("YAML kubernetes = %+v, want %+v", got, want)
	}
	for doc, wantErr := range map[string]string{
		"kind: Service\nmetadata: {name: a}\nspec:\n  kubernetes:\n    sessionAffinityConfig: {clientIP: {timeoutSeconds: \"60\"}}\n": "Field 'kubernetes.sessionAffinityConfig.clientIP.timeoutSeconds' is not of a type(s) integer",
		"kind: Service\nmetadata: {name: a}\nspec:\n  kubernetes:\n    ipFamilies: IPv4\n":                                            "Field 'kubernetes.ipFamilies' is not of a type(s) array",
		"kind: Service\nmetadata: {name: a}\nspec:\n  kubernetes:\n    1: x\n":                                                        "Field 'kubernetes' is not of a type(s) object",
		"kind: Service\nmetadata: {name: a}\nspec:\n  kubernetes:\n    ports: []\n":                                                   `Invalid field 'kubernetes': unknown field "ports"`,
	} {
		if _, err := DecodeYAML([]byte(doc)); errString(err) != wantErr {
			t.Errorf("DecodeYAML(%q) = %v, want %s", doc, err, wantErr)
		}
	}
}

func TestGetsKubernetesService(t *testing.T) {
	for _, c := range []struct {
		typ   string
		plane ControlPlane
		gets  bool
	}{
		{TypeMicroservice, ControlPlaneKubernetes, true},
		{TypeAgent, ControlPlaneKubernetes, true},
		{TypeExternal, ControlPlaneKubernetes, true},
		{TypeK8s, ControlPlaneKubernetes, false}, // its backend is in the cluster already
		{TypeMicroservice, "Kubernetes", true},   // the setting's case does not matter
		{TypeMicroservice, ControlPlaneRemote, false},
		{TypeExternal, ControlPlaneRemote, false},
		{TypeK8s, ControlPlaneRemote, false},
	} {
		if got := GetsKubernetesService(c.typ, c.plane); got != c.gets {
			t.Errorf("GetsKubernetesService(%s, %s) = %v, want %v", c.typ, c.plane, got, c.gets)
		}
	}
}
