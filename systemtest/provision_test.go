package systemtest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const checkoutUUID = "11111111-1111-1111-1111-111111111111"

// fleet is seed 000's setting: a hub, edge agents fog-a and fog-b below it,
// an interior agent, and a second interior router fog-a also connects to.
type fleet struct {
	hub, fogA, fogB, interior, bridge agentOut
}

func newFleet(s *system) fleet {
	var f fleet
	f.hub = s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	f.bridge = s.agent(map[string]any{"name": "bridge-b", "routerMode": "interior", "host": "bridge-b.example.com"})
	f.fogA = s.agent(map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub", "bridge-b"}})
	f.fogB = s.agent(map[string]any{"name": "fog-b", "routerMode": "edge", "upstreamRouters": []string{"hub"}})
	f.interior = s.agent(map[string]any{"name": "int-1", "routerMode": "interior", "upstreamRouters": []string{"hub"}})
	s.microservice(map[string]any{"uuid": checkoutUUID, "application": "orders", "name": "checkout", "agent": "fog-a"})
	return f
}

func TestSeedExamplesProduceTheSeedObjects(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		f := newFleet(s)
		hostNet := s.microservice(map[string]any{"application": "orders", "name": "cache", "agent": "fog-a", "hostNetworkMode": true})
		onInterior := s.microservice(map[string]any{"application": "orders", "name": "db", "agent": "int-1"})

		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "checkout", "tags": []string{"checkout"}, "type": "microservice",
			"resource": "orders/checkout", "targetPort": 8080, "defaultBridge": "default-router"}, nil)
		svc := s.waitStatus("checkout", "ready")
		if svc.BridgePort != 10024 || svc.ServicePort == nil || *svc.ServicePort != 10024 {
			t.Errorf("bridgePort %d servicePort %v, want both 10024", svc.BridgePort, svc.ServicePort)
		}
		if svc.ServiceEndpoint == nil || *svc.ServiceEndpoint != "hub.example.com" {
			t.Errorf("serviceEndpoint %v, want the hub host", svc.ServiceEndpoint)
		}
		if svc.Resource != checkoutUUID {
			t.Errorf("resource stored as %q, want the microservice uuid", svc.Resource)
		}

		cases := []struct {
			name, site string
			body       map[string]any
			connector  string // want, with %d for nothing
		}{
			{"checkout", "fog-a", nil,
				`{"name":"checkout-connector","host":"orders.checkout","port":"8080","address":"checkout","processId":"11111111-1111-1111-1111-111111111111"}`},
			{"cache", "fog-a", map[string]any{"type": "microservice", "resource": hostNet, "targetPort": 6379},
				`{"name":"cache-connector","host":"edgelet.default.svc.bridge.local","port":"6379","address":"cache","processId":"` + hostNet + `"}`},
			{"db", "int-1", map[string]any{"type": "microservice", "resource": "orders/db", "targetPort": 5432},
				`{"name":"db-connector","host":"127.0.0.1","port":"5432","address":"db","processId":"` + onInterior + `"}`},
			{"ssh", "fog-a", map[string]any{"type": "agent", "resource": "fog-a", "targetPort": 22},
				`{"name":"ssh-connector","host":"edgelet.default.svc.bridge.local","port":"22","address":"ssh","processId":"` + f.fogA.UUID + `-local-22"}`},
			{"ssh-int", "int-1", map[string]any{"type": "agent", "resource": f.interior.UUID, "targetPort": 22},
				`{"name":"ssh-int-connector","host":"127.0.0.1","port":"22","address":"ssh-int","processId":"` + f.interior.UUID + `-local-22"}`},
			{"vendor", "hub", map[string]any{"type": "external", "resource": "203.0.113.10", "targetPort": 443},
				`{"name":"vendor-connector","host":"203.0.113.10","port":"443","address":"vendor","processId":"203.0.113.10-external-443"}`},
		}
		for _, c := range cases {
			if c.body != nil {
				c.body["name"] = c.name
				s.must(http.StatusCreated, "POST", "/api/v3/services", c.body, nil)
			}
			got := s.waitStatus(c.name, "ready")
			_, connectors := s.bridges(c.site)
			if string(connectors[c.name+"-connector"]) != c.connector {
				t.Errorf("%s: connector on %s\n got %s\nwant %s", c.name, c.site, connectors[c.name+"-connector"], c.connector)
			}
			listeners, _ := s.bridges("hub")
			want := fmt.Sprintf(`{"name":"%s-listener","port":"%d","address":"%s"}`, c.name, got.BridgePort, c.name)
			if string(listeners[c.name+"-listener"]) != want {
				t.Errorf("%s: hub listener\n got %s\nwant %s", c.name, listeners[c.name+"-listener"], want)
			}
		}
		// The connector is only where the backend is.
		for _, agent := range []string{"hub", "fog-b", "bridge-b"} {
			if _, connectors := s.bridges(agent); connectors["checkout-connector"] != nil {
				t.Errorf("checkout-connector also on %s", agent)
			}
		}

		// A custom defaultBridge: the listener goes to that router, not the hub.
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "bridged", "type": "agent", "resource": "fog-a", "targetPort": 9000, "defaultBridge": "bridge-b"}, nil)
		got := s.waitStatus("bridged", "ready")
		if got.DefaultBridge != f.bridge.UUID || got.ServiceEndpoint == nil || *got.ServiceEndpoint != "bridge-b.example.com" {
			t.Errorf("bridged: defaultBridge %q endpoint %v, want bridge-b's uuid and host", got.DefaultBridge, got.ServiceEndpoint)
		}
		if l, _ := s.bridges("bridge-b"); l["bridged-listener"] == nil {
			t.Errorf("bridged-listener missing on bridge-b")
		}
		if l, _ := s.bridges("hub"); l["bridged-listener"] != nil {
			t.Errorf("bridged-listener on the hub, want it only on bridge-b")
		}
	})
}

// nothingOf asserts that no router holds an object of service name.
func (s *system) nothingOf(name string, agents ...string) {
	s.t.Helper()
	for _, a := range agents {
		l, c := s.bridges(a)
		if l[name+"-listener"] != nil || c[name+"-connector"] != nil {
			s.t.Errorf("agent %s still holds objects of %s: listener %s connector %s", a, name, l[name+"-listener"], c[name+"-connector"])
		}
	}
}

func TestUpdateAndDeleteLeaveNothingStale(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		newFleet(s)
		s.microservice(map[string]any{"application": "orders", "name": "checkout-v2", "agent": "fog-b"})
		all := []string{"hub", "fog-a", "fog-b", "int-1", "bridge-b"}

		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, nil)
		s.waitStatus("checkout", "ready")

		// Moving the backend moves the connector: none stays on fog-a.
		s.must(http.StatusNoContent, "PATCH", "/api/v3/services/checkout", map[string]any{"resource": "orders/checkout-v2", "targetPort": 8081}, nil)
		svc := s.waitStatus("checkout", "ready")
		if _, c := s.bridges("fog-a"); c["checkout-connector"] != nil {
			t.Errorf("connector left on fog-a after the resource moved: %s", c["checkout-connector"])
		}
		if _, c := s.bridges("fog-b"); c["checkout-connector"] == nil {
			t.Errorf("connector missing on fog-b")
		}
		if svc.TargetPort != 8081 || svc.BridgePort != 10024 {
			t.Errorf("after PATCH targetPort %d bridgePort %d, want 8081 and the kept 10024", svc.TargetPort, svc.BridgePort)
		}

		s.must(http.StatusNoContent, "DELETE", "/api/v3/services/checkout", nil, nil)
		if svc, ok := s.getService("checkout"); ok && svc.ProvisioningStatus != "deleting" {
			t.Fatalf("service %s after DELETE, want deleting or gone", svc.ProvisioningStatus)
		}
		s.waitFor("checkout's objects to go", 20*time.Second, func() (bool, string) {
			for _, a := range all {
				l, c := s.bridges(a)
				if l["checkout-listener"] != nil || c["checkout-connector"] != nil {
					return false, "still on " + a
				}
			}
			return true, ""
		})
		s.nothingOf("checkout", all...)
		s.waitFor("checkout to be gone", 10*time.Second, func() (bool, string) {
			svc, ok := s.getService("checkout")
			return !ok, svc.ProvisioningStatus
		})

		// The freed port is the first free one again.
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "again", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
		if got := s.waitStatus("again", "ready"); got.BridgePort != 10024 {
			t.Errorf("port after delete %d, want 10024 reused", got.BridgePort)
		}
	})
}

func TestBackendOnRouterlessAgentFailsWithReason(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		newFleet(s)
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, nil)
		s.waitStatus("checkout", "ready")
		// The backend's agent loses its router: the service fails by itself,
		// saying why.
		s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}, nil)
		svc := s.waitStatus("checkout", "failed")
		want := "Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent"
		if svc.ProvisioningError == nil || *svc.ProvisioningError != want {
			t.Errorf("provisioningError %v, want %q", svc.ProvisioningError, want)
		}
		// The router comes back as interior: the service is ready again and
		// the connector now dials 127.0.0.1.
		s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"routerMode": "interior"}, nil)
		s.waitStatus("checkout", "ready")
		if _, c := s.bridges("fog-a"); !strings.Contains(string(c["checkout-connector"]), `"host":"127.0.0.1"`) {
			t.Errorf("connector on fog-a after it became interior: %s", c["checkout-connector"])
		}
		// POST .../reconcile reconciles at once; an unknown service is 404.
		s.must(http.StatusAccepted, "POST", "/api/v3/services/checkout/reconcile", nil, nil)
		s.waitStatus("checkout", "ready")
		s.must(http.StatusNotFound, "POST", "/api/v3/services/nope/reconcile", nil, nil)
		if _, c := s.bridges("fog-a"); c["checkout-connector"] == nil {
			t.Errorf("connector not rewritten on fog-a after its router came back")
		}
	})
}

// Creates at once, which commit in batches, each answer on their own: a
// name taken by another create of the burst is a 409 for every create of
// it but one, and the creates beside them are all stored.
func TestParallelCreatesGetDistinctPortsAndAllObjects(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 2)
		newFleet(s)
		const n, dups = 200, 20
		var wg sync.WaitGroup
		errs := make(chan string, n)
		var dupCodes sync.Map
		for i := range n + dups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("svc-%03d", i)
				if i >= n {
					name = "dup"
				}
				code, body := s.do("POST", "/api/v3/services", map[string]any{
					"name": name, "type": "external", "resource": "203.0.113.10", "targetPort": 1000 + i})
				switch {
				case name == "dup" && (code == http.StatusCreated || code == http.StatusConflict && strings.Contains(string(body), "Service with name dup already exists")):
					counter, _ := dupCodes.LoadOrStore(code, new(atomic.Int32))
					counter.(*atomic.Int32).Add(1)
				case code != http.StatusCreated:
					errs <- fmt.Sprintf("create %s: %d %s", name, code, body)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		for code, want := range map[int]int32{http.StatusCreated: 1, http.StatusConflict: dups - 1} {
			if got, _ := dupCodes.Load(code); got == nil || got.(*atomic.Int32).Load() != want {
				t.Errorf("creates of dup answered %d %v times, want %d", code, got, want)
			}
		}
		ports := map[int]string{}
		for i := range n {
			name := fmt.Sprintf("svc-%03d", i)
			svc := s.waitStatus(name, "ready")
			if other, dup := ports[svc.BridgePort]; dup {
				t.Errorf("%s and %s share bridgePort %d", name, other, svc.BridgePort)
			}
			ports[svc.BridgePort] = name
		}
		listeners, connectors := s.bridges("hub")
		for i := range n {
			name := fmt.Sprintf("svc-%03d", i)
			if listeners[name+"-listener"] == nil || connectors[name+"-connector"] == nil {
				t.Errorf("hub lacks an object of %s", name)
			}
		}
		if len(listeners) != n+1 || len(connectors) != n+1 {
			t.Errorf("hub has %d listeners and %d connectors, want %d each (dup's too)", len(listeners), len(connectors), n+1)
		}
	})
}

// TestBridgeMustStayUpstreamOfTheBackend: a custom defaultBridge must be
// one of the backend agent's upstream routers, on a service write and
// after an agent change. When fog-a stops connecting to bridge-b, the
// service fails with the reason and bridge-b drops its listener (it could
// not reach the connector); when fog-a connects again, it is ready again.
func TestBridgeMustStayUpstreamOfTheBackend(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		f := newFleet(s)
		code, body := s.do("POST", "/api/v3/services", map[string]any{
			"name": "stray", "type": "agent", "resource": "fog-b", "targetPort": 9000, "defaultBridge": "bridge-b"})
		if want := "Invalid router connection, router bridge-b is not connected to fog-b"; code != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("create bridged through a router the backend does not connect to: %d %s, want 400 %q", code, body, want)
		}

		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "bridged", "type": "agent", "resource": "fog-a", "targetPort": 9000, "defaultBridge": "bridge-b"}, nil)
		s.waitStatus("bridged", "ready")
		// The answer says where the objects went, as the server decided.
		placement := func() string {
			var v struct {
				Placement struct{ ConnectorAgent, HubAgent string }
			}
			s.must(http.StatusOK, "GET", "/api/v3/services/bridged", nil, &v)
			return v.Placement.ConnectorAgent + " " + v.Placement.HubAgent
		}
		if got, want := placement(), f.fogA.UUID+" "+f.bridge.UUID; got != want {
			t.Errorf("placement %q, want connector on fog-a and hub listener on bridge-b (%q)", got, want)
		}

		s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"upstreamRouters": []string{"hub"}}, nil)
		got := s.waitStatus("bridged", "failed")
		if p := placement(); p != " " {
			t.Errorf("placement of an invalid service %q, want none", p)
		}
		want := "Invalid router connection, router bridge-b is not connected to fog-a"
		if got.ProvisioningError == nil || !strings.Contains(*got.ProvisioningError, want) {
			t.Errorf("after fog-a dropped bridge-b: provisioningError %v, want it to say %q", got.ProvisioningError, want)
		}
		s.waitFor("bridge-b and fog-a without bridged's objects", 30*time.Second, func() (bool, string) {
			l, _ := s.bridges("bridge-b")
			_, c := s.bridges("fog-a")
			return l["bridged-listener"] == nil && c["bridged-connector"] == nil,
				fmt.Sprintf("bridge-b listener %s, fog-a connector %s", l["bridged-listener"], c["bridged-connector"])
		})

		s.must(http.StatusOK, "PATCH", "/api/v3/agents/fog-a", map[string]any{"upstreamRouters": []string{"hub", "bridge-b"}}, nil)
		s.waitStatus("bridged", "ready")
		if l, _ := s.bridges("bridge-b"); l["bridged-listener"] == nil {
			t.Errorf("bridged-listener missing on bridge-b once fog-a connects to it again")
		}
	})
}
