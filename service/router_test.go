package service

import (
	"testing"

	"svcbridge/inventory"
)

func TestConnectorHostAndProcessIDFollowTheSeedTables(t *testing.T) {
	ms := Backend{Type: TypeMicroservice, Resource: "11111111-1111-1111-1111-111111111111", Application: "orders", Microservice: "checkout"}
	edge, interior := inventory.RouterEdge, inventory.RouterInterior
	with := func(b Backend, mode string, hostNet bool) Backend {
		b.RouterMode, b.HostNetwork = mode, hostNet
		return b
	}
	cases := []struct {
		name       string
		b          Backend
		port       int
		host, proc string
	}{
		{"microservice on edge", with(ms, edge, false), 8080, "orders.checkout", ms.Resource},
		{"microservice on edge, host network", with(ms, edge, true), 8080, EdgeletHost, ms.Resource},
		{"microservice on interior", with(ms, interior, false), 8080, "127.0.0.1", ms.Resource},
		{"microservice on interior, host network", with(ms, interior, true), 8080, "127.0.0.1", ms.Resource},
		{"agent on edge", Backend{Type: TypeAgent, Resource: "fog-a", RouterMode: edge}, 22, EdgeletHost, "fog-a-local-22"},
		{"agent on interior", Backend{Type: TypeAgent, Resource: "fog-a", RouterMode: interior}, 22, "127.0.0.1", "fog-a-local-22"},
		{"k8s", Backend{Type: TypeK8s, Resource: "payments.payments.svc.cluster.local"}, 8080,
			"payments.payments.svc.cluster.local", "payments.payments.svc.cluster.local-k8s-8080"},
		{"external", Backend{Type: TypeExternal, Resource: "203.0.113.10"}, 443, "203.0.113.10", "203.0.113.10-external-443"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ConnectorHost(c.b); got != c.host {
				t.Errorf("host %q, want %q", got, c.host)
			}
			if got := ProcessID(c.b, c.port); got != c.proc {
				t.Errorf("processId %q, want %q", got, c.proc)
			}
		})
	}
}
