package service

import (
	"reflect"
	"testing"

	"svcbridge/routerconfig"
)

func TestPlanHubPairs(t *testing.T) {
	svc := func(typ, resource string) *Service {
		return &Service{Spec: Spec{Name: "checkout", Type: typ, Resource: resource, TargetPort: 8080}, BridgePort: 10024}
	}
	listener := []routerconfig.Listener{Listener("checkout", 10024)}
	listenerName := []string{routerconfig.ListenerName("checkout")}
	connectorName := []string{routerconfig.ConnectorName("checkout")}
	cases := []struct {
		name string
		svc  *Service
		want HubPairs
	}{
		{"deleted: neither pair stays", nil, HubPairs{RemoveListeners: listenerName, RemoveConnectors: connectorName}},
		{"microservice: the connector is on the backend's router", svc(TypeMicroservice, "ms-uuid"),
			HubPairs{Listeners: listener, RemoveConnectors: connectorName}},
		{"agent: the connector is on the agent's router", svc(TypeAgent, "fog-a"),
			HubPairs{Listeners: listener, RemoveConnectors: connectorName}},
		{"k8s: the hub reaches the backend", svc(TypeK8s, "orders.shop"), HubPairs{Listeners: listener,
			Connectors: []routerconfig.Connector{Connector("checkout", 8080, Backend{Type: TypeK8s, Resource: "orders.shop"})}}},
		{"external: the hub reaches the backend", svc(TypeExternal, "db.example.com"), HubPairs{Listeners: listener,
			Connectors: []routerconfig.Connector{Connector("checkout", 8080, Backend{Type: TypeExternal, Resource: "db.example.com"})}}},
	}
	for _, c := range cases {
		if got := PlanHubPairs("checkout", c.svc); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: PlanHubPairs = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Writing a service's pairs and then those of its deletion leaves the hub
// file's other pairs as they were.
func TestHubPairsApply(t *testing.T) {
	other, err := PlanHubPairs("orders", &Service{Spec: Spec{Type: TypeExternal, Resource: "db", TargetPort: 5432}, BridgePort: 10025}).Apply(nil)
	if err != nil {
		t.Fatal(err)
	}
	with, err := PlanHubPairs("checkout", &Service{Spec: Spec{Type: TypeK8s, Resource: "web", TargetPort: 80}, BridgePort: 10024}).Apply(other)
	if err != nil {
		t.Fatal(err)
	}
	if routerconfig.SameJSON(with, other) {
		t.Fatalf("the pairs of checkout were not written: %s", with)
	}
	without, err := PlanHubPairs("checkout", nil).Apply(with)
	if err != nil {
		t.Fatal(err)
	}
	if !routerconfig.SameJSON(without, other) {
		t.Errorf("after the deletion the hub file is\n%s\nwant\n%s", without, other)
	}
}
