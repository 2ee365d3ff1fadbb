package systemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// `svcbridge import` (issue 39) through the real binary, from a fake
// ioFog controller that answers the reference's documented shapes
// (Datasance Controller v3.7.3: GET /api/v3/iofog-list, /microservices,
// /services), including the state its bridge-port race leaves: two
// services on one port.

const (
	refToken   = "reference-access-token-not-to-be-printed"
	refHub     = "0a6f1c7e-1111-4c1e-9d5e-000000000001"
	refPlantA  = "0a6f1c7e-2222-4c1e-9d5e-000000000002"
	refPlantB  = "0a6f1c7e-3333-4c1e-9d5e-000000000003"
	refOrdersM = "0a6f1c7e-4444-4c1e-9d5e-000000000004"
)

// refAgent, refMicroservice and refService are the reference's objects,
// the fields its answers carry that matter here.
type refAgent struct {
	UUID, Name, Host, RouterMode string
	IsSystem                     bool
	Upstream, Tags               []string
}

type refService struct {
	Name, Type, Resource string
	TargetPort           int
	BridgePort           int
	Tags                 []string
}

// referenceController is the fake: its state, and every request it saw.
type referenceController struct {
	agents   []refAgent
	services []refService
	mu       sync.Mutex
	requests []string // "METHOD path Authorization"
}

func newReferenceController() *referenceController {
	return &referenceController{
		agents: []refAgent{
			{UUID: refHub, Name: "hub", Host: "hub.example.com", RouterMode: "interior", IsSystem: true, Tags: []string{}},
			{UUID: refPlantA, Name: "plant-a", Host: "10.0.0.5", RouterMode: "edge", Upstream: []string{"default-router"},
				Tags: []string{"service.datasance.com/tag: checkout", "site: a"}},
			{UUID: refPlantB, Name: "plant-b", Host: "10.0.0.6", RouterMode: "edge", Upstream: []string{"default-router"},
				Tags: []string{"service.datasance.com/tag: all"}},
		},
		services: []refService{
			// billing and checkout: the race handed both 10024.
			{Name: "checkout", Type: "microservice", Resource: refOrdersM, TargetPort: 8080, BridgePort: 10024, Tags: []string{"checkout"}},
			{Name: "billing", Type: "external", Resource: "billing.example.com", TargetPort: 443, BridgePort: 10024, Tags: []string{}},
			// From a BRIDGE_PORTS_RANGE svcbridge does not have.
			{Name: "legacy", Type: "external", Resource: "legacy.example.com", TargetPort: 22, BridgePort: 9000, Tags: []string{}},
			{Name: "ssh", Type: "agent", Resource: refPlantB, TargetPort: 22, BridgePort: 10025, Tags: []string{}},
		},
	}
}

func (rc *referenceController) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.requests = append(rc.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	rc.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+refToken {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "Unauthorized: No authentication information found"})
		return
	}
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v3/iofog-list":
		var fogs []map[string]any
		for _, a := range rc.agents {
			// _getFogExtraInformation: the fog's columns, tags as strings,
			// its router config; BIGINT columns come as strings on
			// PostgreSQL.
			fogs = append(fogs, map[string]any{"uuid": a.UUID, "name": a.Name, "host": a.Host, "isSystem": a.IsSystem,
				"routerMode": a.RouterMode, "messagingPort": 5671, "upstreamRouters": a.Upstream, "tags": a.Tags,
				"systemAvailableMemory": "8589934592", "daemonStatus": "RUNNING", "edgeResources": []any{}, "volumeMounts": []any{}})
		}
		json.NewEncoder(w).Encode(map[string]any{"fogs": fogs})
	case "/api/v3/microservices":
		// _buildGetMicroserviceResponse: application by name, flowId.
		json.NewEncoder(w).Encode(map[string]any{"microservices": []map[string]any{{
			"uuid": refOrdersM, "name": "checkout", "config": "{}", "applicationId": 3, "flowId": 3, "application": "orders",
			"iofogUuid": refPlantA, "hostNetworkMode": false, "logSize": 50, "ports": []any{map[string]any{"internal": 8080, "external": 0, "protocol": "tcp"}},
			"images": []any{map[string]any{"containerImage": "orders/checkout:1", "fogTypeId": 1}}, "routes": []any{}, "env": []any{},
		}}})
	case "/api/v3/services":
		var list []map[string]any
		for _, s := range rc.services {
			list = append(list, map[string]any{"name": s.Name, "type": s.Type, "resource": s.Resource, "defaultBridge": "default-router",
				"bridgePort": s.BridgePort, "targetPort": s.TargetPort, "servicePort": s.BridgePort, "k8sType": nil,
				"serviceEndpoint": "hub.example.com", "tags": s.Tags, "provisioningStatus": "ready", "provisioningError": nil})
		}
		json.NewEncoder(w).Encode(list)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// routers are the reference's router configs as its services put them
// (reference-controller.md §5.2, §6.1): agent uuid → "listener|connector
// name" → port. The connector is on the backend's agent (k8s and external:
// the default router's), the hub listener on the default router, a
// listener on each agent whose tags select the service.
func (rc *referenceController) routers() map[string]map[string]string {
	out := map[string]map[string]string{}
	put := func(agent, kind, name string, port int) {
		if out[agent] == nil {
			out[agent] = map[string]string{}
		}
		out[agent][kind+" "+name] = fmt.Sprint(port)
	}
	for _, s := range rc.services {
		switch s.Type {
		case "microservice":
			put(refPlantA, "connector", s.Name+"-connector", s.TargetPort)
		case "agent":
			put(s.Resource, "connector", s.Name+"-connector", s.TargetPort)
		default:
			put(refHub, "connector", s.Name+"-connector", s.TargetPort)
		}
		put(refHub, "listener", s.Name+"-listener", s.BridgePort)
		for _, a := range rc.agents {
			for _, tag := range a.Tags {
				token, ok := strings.CutPrefix(tag, "service.datasance.com/tag: ")
				if ok && (token == "all" || slices.Contains(s.Tags, token)) {
					put(a.UUID, "listener", s.Name+"-listener", s.BridgePort)
				}
			}
		}
	}
	return out
}

func (rc *referenceController) seen() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

func TestImportFromTheReferenceController(t *testing.T) {
	s := newSystem(t, "sqlite", 1)
	ref := newReferenceController()
	refSrv := httptest.NewServer(ref)
	t.Cleanup(refSrv.Close)
	tokenFile := cliFile(t, "token", refToken+"\n")
	importArgs := []string{"import", "--from", refSrv.URL, "--from-token-file", tokenFile,
		"--tag-prefix", "service.iofog.org/tag", "--bridge-ports-range", "10024-65535"}
	// What svcbridge holds already: another agent named plant-b.
	s.must(http.StatusCreated, "POST", "/api/v3/agents", map[string]any{"name": "plant-b", "routerMode": "none"}, nil)

	run := func(t *testing.T, want int, extra ...string) cliResult {
		t.Helper()
		r := cliMust(t, s.url, want, append(slices.Clone(importArgs), extra...)...)
		if strings.Contains(r.stdout+r.stderr, refToken) {
			t.Fatalf("the import printed the controller's token:\n%s", r)
		}
		return r
	}
	wantLines := func(t *testing.T, r cliResult, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !slices.Contains(strings.Split(r.stdout, "\n"), l) {
				t.Errorf("output lacks the line %q:\n%s", l, r)
			}
		}
	}

	t.Run("dry run prints the plan and writes nothing", func(t *testing.T) {
		r := run(t, 2, "--dry-run")
		wantLines(t, r,
			"agent/hub: create", "agent/plant-a: create", "microservice/orders/checkout: create",
			"service/billing: create, bridgePort 10024 kept",
			// Moved ports come from the top of the range, away from the
			// reference's next ones.
			"service/checkout: create, bridgePort 10024 -> 65535 (shared with billing)",
			"service/legacy: create, bridgePort 9000 -> 65534 (outside BRIDGE_PORTS_RANGE 10024-65535)",
			"service/ssh: not imported because agent plant-b is in conflict",
			"dry run, nothing written: 6 to create, 0 unchanged, 0 skipped, 1 in conflict, 0 refused, 1 not imported, 0 failed")
		if !strings.Contains(r.stdout, "agent/plant-b: conflict, svcbridge's agent plant-b has uuid ") {
			t.Errorf("plant-b is no conflict:\n%s", r)
		}
		if !strings.Contains(r.stdout, "note: agent tags service.datasance.com/tag: T become service.iofog.org/tag: T") {
			t.Errorf("no note on the tag prefix:\n%s", r)
		}
		var agents, services []json.RawMessage
		s.must(http.StatusOK, "GET", "/api/v3/agents", nil, &agents)
		s.must(http.StatusOK, "GET", "/api/v3/services", nil, &services)
		if len(agents) != 1 || len(services) != 0 {
			t.Fatalf("after the dry run svcbridge holds %d agents and %d services, want 1 and 0", len(agents), len(services))
		}
	})

	t.Run("the import creates what does not conflict", func(t *testing.T) {
		r := run(t, 2)
		wantLines(t, r, "microservice/orders/checkout: created",
			"service/billing: created, bridgePort 10024 kept",
			"service/checkout: created, bridgePort 10024 -> 65535 (shared with billing)",
			"service/legacy: created, bridgePort 9000 -> 65534 (outside BRIDGE_PORTS_RANGE 10024-65535)",
			"service/ssh: not imported because agent plant-b is in conflict",
			"6 created, 0 unchanged, 0 skipped, 1 in conflict, 0 refused, 1 not imported, 0 failed")
		if !strings.Contains(r.stdout, "agent/hub: created (agent token, shown once: ") || !strings.Contains(r.stderr, "error: import incomplete") {
			t.Errorf("import output:\n%s", r)
		}
	})

	t.Run("once the conflicts are gone, a second run finishes", func(t *testing.T) {
		s.must(http.StatusNoContent, "DELETE", "/api/v3/agents/plant-b", nil, nil)
		r := run(t, 0)
		wantLines(t, r, "agent/hub: unchanged", "agent/plant-a: unchanged", "microservice/orders/checkout: unchanged",
			"service/billing: unchanged, bridgePort 10024 kept",
			"service/checkout: unchanged, bridgePort 10024 -> 65535 (shared with billing)",
			"service/legacy: unchanged, bridgePort 9000 -> 65534 (outside BRIDGE_PORTS_RANGE 10024-65535)",
			"service/ssh: created, bridgePort 10025 kept",
			"2 created, 6 unchanged, 0 skipped, 0 in conflict, 0 refused, 0 not imported, 0 failed")
		if !strings.Contains(r.stdout, "agent/plant-b: created (agent token, shown once: ") {
			t.Errorf("plant-b was not created:\n%s", r)
		}
	})

	t.Run("a third run changes nothing", func(t *testing.T) {
		r := run(t, 0)
		if !strings.Contains(r.stdout, "0 created, 8 unchanged, 0 skipped, 0 in conflict, 0 refused, 0 not imported, 0 failed") || strings.Contains(r.stdout, ": create") {
			t.Fatalf("third import:\n%s", r)
		}
	})

	t.Run("the routers hold what the reference's held, on the kept ports", func(t *testing.T) {
		s.waitAllReady("the imported services", 4, 60*time.Second)
		moved := map[string]string{"checkout-listener": "65535", "legacy-listener": "65534"}
		if n := len(ref.routers()); n != 3 {
			t.Fatalf("the reference's routers: %d, want all 3 agents'", n)
		}
		// An agent created by the last run gets its listeners from the
		// agent queue, which may still be at work.
		s.waitFor("every router to hold what the reference's held", 60*time.Second, func() (bool, string) {
			var diffs []string
			for agent, objects := range ref.routers() {
				var names []string
				for o := range objects {
					names = append(names, o)
				}
				slices.Sort(names)
				listeners, connectors := s.bridges(agent)
				for _, o := range names {
					kind, name, _ := strings.Cut(o, " ")
					want := objects[o]
					if p, ok := moved[name]; ok {
						want = p
					}
					held := connectors[name]
					if kind == "listener" {
						held = listeners[name]
					}
					var obj struct{ Port string }
					if err := json.Unmarshal(held, &obj); held == nil || err != nil || obj.Port != want {
						diffs = append(diffs, fmt.Sprintf("agent %s: the reference's %s %s on port %s; svcbridge's holds %s (want port %s)", agent, kind, name, objects[o], held, want))
					}
				}
				if got, want := len(listeners)+len(connectors), len(objects); got != want {
					diffs = append(diffs, fmt.Sprintf("agent %s holds %d bridge objects, the reference's %d", agent, got, want))
				}
			}
			slices.Sort(diffs)
			return len(diffs) == 0, strings.Join(diffs, "\n")
		})
	})

	t.Run("the controller was only read", func(t *testing.T) {
		for _, req := range ref.seen() {
			if !strings.HasPrefix(req, "GET ") || !strings.HasSuffix(req, " Bearer "+refToken) {
				t.Errorf("the controller got %q", strings.ReplaceAll(req, refToken, "<token>"))
			}
		}
		if len(ref.seen()) != 4*3 {
			t.Errorf("the controller got %d requests, want 3 per run", len(ref.seen()))
		}
	})

	t.Run("a refused token is named, not printed", func(t *testing.T) {
		const wrong = "wrong-access-token-0123456789"
		r := cliMust(t, s.url, 1, "import", "--from", refSrv.URL, "--from-token", wrong, "--dry-run")
		if strings.Contains(r.stdout+r.stderr, wrong) ||
			!strings.Contains(r.stderr, "the ioFog controller answered GET /api/v3/iofog-list with 401: Unauthorized: No authentication information found: check --from-token") {
			t.Fatalf("import with a refused token:\n%s", r)
		}
	})
}
