package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"svcbridge/wire"
)

// TestServiceUnchanged: apply reads a Service document as the server
// does (the defaultBridge default, names for the uuids stored, the remote
// control plane's servicePort), spec.kubernetes included.
func TestServiceUnchanged(t *testing.T) {
	k8s := func(s string) *string { return &s }
	port := func(p int) *int { return &p }
	stored := func(edit func(*wire.Service)) Service {
		s := wire.Service{Name: "checkout", Tags: []string{"checkout"}, Type: "microservice", Resource: "ms-uuid",
			ResourceName: "orders/checkout", TargetPort: 8080, DefaultBridge: "default-router", DefaultBridgeName: "default-router",
			BridgePort: 10024, ServicePort: port(80), K8sType: k8s("LoadBalancer"),
			Kubernetes: json.RawMessage(`{"loadBalancerSourceRanges":["10.0.0.0/8"]}`)}
		if edit != nil {
			edit(&s)
		}
		return Service{Service: s}
	}
	// doc is the document of stored(nil), with more spec fields.
	doc := func(more string) string {
		return "kind: Service\nmetadata: {name: checkout, tags: [checkout]}\n" +
			"spec: {type: microservice, resource: orders/checkout, targetPort: 8080, servicePort: 80, k8sType: LoadBalancer,\n" +
			"  kubernetes: {loadBalancerSourceRanges: [10.0.0.0/8]}" + more + "}\n"
	}
	remote := func(s *wire.Service) { s.ServicePort, s.K8sType, s.Kubernetes = port(10024), nil, nil }
	for _, c := range []struct {
		name      string
		doc       string
		cur       Service
		unchanged bool
	}{
		{"as stored, resource by name, defaultBridge by default", doc(""), stored(nil), true},
		{"resource by uuid", strings.Replace(doc(", defaultBridge: default-router"), "orders/checkout", "ms-uuid", 1), stored(nil), true},
		{"another resource", strings.Replace(doc(""), "orders/checkout", "orders/billing", 1), stored(nil), false},
		{"defaultBridge by name", doc(", defaultBridge: hub"), stored(func(s *wire.Service) { s.DefaultBridge, s.DefaultBridgeName = "hub-uuid", "hub" }), true},
		{"another defaultBridge", doc(", defaultBridge: hub"), stored(nil), false},
		{"spec.kubernetes changed", doc(""), stored(func(s *wire.Service) { s.Kubernetes = json.RawMessage(`{"loadBalancerSourceRanges":["192.0.2.0/24"]}`) }), false},
		{"spec.kubernetes added", doc(""), stored(func(s *wire.Service) { s.Kubernetes = nil }), false},
		{"targetPort changed", doc(""), stored(func(s *wire.Service) { s.TargetPort = 9090 }), false},
		{"tags changed", doc(""), stored(func(s *wire.Service) { s.Tags = nil }), false},
		{"remote: servicePort is the bridge port", `kind: Service
metadata: {name: checkout, tags: [checkout]}
spec: {type: microservice, resource: orders/checkout, targetPort: 8080, servicePort: 80}
`, stored(remote), true},
		{"not a Service document the server reads", "kind: Service\nmetadata: {name: checkout}\nspec: {targetPort: x}\n", stored(nil), false},
	} {
		docs, err := splitDocuments("f.yaml", []byte(c.doc))
		if err != nil || len(docs) != 1 {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := serviceUnchanged(docs[0], c.cur); got != c.unchanged {
			t.Errorf("%s: unchanged %v, want %v", c.name, got, c.unchanged)
		}
	}
}

// TestCheckDryRun: a dry run is sent to svcbridge only; another server
// (the reference controller serves the same write routes) would ignore
// ?dryRun= and write.
func TestCheckDryRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		header bool
		status int
		ok     bool
	}{
		{"svcbridge", true, http.StatusOK, true},
		{"svcbridge answering an error", true, http.StatusServiceUnavailable, true},
		{"another server", false, http.StatusOK, false},
		{"another server without /healthz", false, http.StatusNotFound, false},
	} {
		var paths []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			paths = append(paths, r.Method+" "+r.URL.Path)
			if c.header {
				w.Header().Set("X-Svcbridge-Version", "devel")
			}
			w.WriteHeader(c.status)
		}))
		err := (&Client{Server: srv.URL}).CheckDryRun(context.Background())
		srv.Close()
		if (err == nil) != c.ok || (!c.ok && ExitCode(err) != ExitOther) {
			t.Errorf("%s: %v", c.name, err)
		}
		if len(paths) != 1 || paths[0] != "GET /healthz" {
			t.Errorf("%s: requests %q", c.name, paths)
		}
	}
}

// Apply reads, for each Microservice document, that microservice alone:
// applying many is not a list of them all for each. A file of 40 is
// applied anew, then unchanged: the server sends each at most once a run.
func TestApplyReadsEachMicroserviceAlone(t *testing.T) {
	f := newFleet(t)
	var mu sync.Mutex
	sent, lookups := 0, 0
	f.wrap(func(w http.ResponseWriter, r *http.Request, api http.Handler) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v3/microservices" {
			api.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		var l wire.MicroserviceList
		if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
			t.Errorf("GET %s: %v", r.URL, err)
		}
		mu.Lock()
		sent, lookups = sent+len(l.Microservices), lookups+1
		mu.Unlock()
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	applyMicroservicesTwice(t, f, 40)
	mu.Lock()
	defer mu.Unlock()
	// The first run's lookups find none of the shop, the second's each one.
	if lookups < 2*41 || sent > 41 {
		t.Errorf("two runs looked microservices up %d times and were sent %d, want at least %d and at most %d", lookups, sent, 2*41, 41)
	}
}

// Against a server that refuses ?name= (one before it), apply looks a
// microservice up among its application's.
func TestApplyMicroservicesOnAServerBeforeName(t *testing.T) {
	f := newFleet(t)
	f.wrap(func(w http.ResponseWriter, r *http.Request, api http.Handler) {
		if r.URL.Path == "/api/v3/microservices" && r.URL.Query().Has("name") {
			http.Error(w, `{"name":"ValidationError","message":"Unknown query parameter 'name'"}`, http.StatusBadRequest)
			return
		}
		api.ServeHTTP(w, r)
	})
	applyMicroservicesTwice(t, f, 3)
}

// applyMicroservicesTwice applies the fleet with n microservices of
// application shop: created, then unchanged.
func applyMicroservicesTwice(t *testing.T, f *fleet, n int) {
	t.Helper()
	doc := fleetDoc
	for i := range n {
		doc += fmt.Sprintf("---\nkind: Microservice\nmetadata: {name: shop/m%02d}\nspec: {agent: fog-a}\n", i)
	}
	file := f.file("shop.yaml", doc)
	last := fmt.Sprintf("microservice/shop/m%02d ", n-1)
	for run, want := range []string{"created", "unchanged"} {
		out, _ := f.must(0, "apply", "-f", file)
		if got := strings.Count(out, "microservice/shop/m"); got != n || !strings.Contains(out, last+want) {
			t.Fatalf("run %d printed %d shop microservices, want %d %s:\n%s", run+1, got, n, want, out)
		}
	}
}

// diff finds a Microservice document's microservice as apply does: none
// to show for the file applied, the agent for one moved.
func TestDiffMicroservice(t *testing.T) {
	f := newFleet(t)
	applyMicroservicesTwice(t, f, 3)
	doc := fleetDoc
	for i := range 3 {
		doc += fmt.Sprintf("---\nkind: Microservice\nmetadata: {name: shop/m%02d}\nspec: {agent: fog-a}\n", i)
	}
	if out, _ := f.must(0, "diff", "-f", f.file("same.yaml", doc)); out != "" {
		t.Errorf("diff of the applied file: %q", out)
	}
	moved := strings.Replace(doc, "shop/m01}\nspec: {agent: fog-a}", "shop/m01}\nspec: {agent: hub}", 1)
	if out, _ := f.must(1, "diff", "-f", f.file("moved.yaml", moved)); !strings.Contains(out, "-  agent: fog-a\n+  agent: hub\n") || strings.Count(out, "+++ ") != 1 {
		t.Errorf("diff of m01 moved to hub:\n%s", out)
	}
}

// delete finds a microservice by application/name, or takes its uuid,
// as apply looks it up.
func TestDeleteMicroservice(t *testing.T) {
	f := newFleet(t)
	applyMicroservicesTwice(t, f, 3)
	c := &Client{Server: f.URL, Token: fleetToken}
	m01, found, err := c.MicroserviceNamed(context.Background(), "shop", "m01")
	if err != nil || !found {
		t.Fatalf("shop/m01: %v (%v)", found, err)
	}
	if out, _ := f.must(0, "delete", "microservice", "shop/m00", m01.UUID); out != "microservice/shop/m00 deleted\nmicroservice/"+m01.UUID+" deleted\n" {
		t.Errorf("delete by name and by uuid printed %q", out)
	}
	if _, errOut := f.must(2, "delete", "microservice", "shop/m00"); !strings.Contains(errOut, "Microservice shop/m00 not found") {
		t.Errorf("deleting it again: %q", errOut)
	}
	left, err := c.ListMicroservices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range left {
		names = append(names, m.Application+"/"+m.Name)
	}
	if !slices.Equal(names, []string{"orders/checkout", "shop/m02"}) {
		t.Errorf("left %v, want orders/checkout and shop/m02", names)
	}
}
