package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"svcbridge/inventory"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// Tag distribution (issue 5) end to end: listeners on every agent whose
// tags select a Service, from both directions, through the API, on real
// Temporal and a real store.

const tagPrefix = service.DefaultTagPrefix

func withTagPrefix(prefix string) option {
	return func(s *system) { s.tags = service.TagRule{Prefix: prefix} }
}

// listenerSet returns the services an agent's router listens for (its
// "-listener" entries), sorted; nil when the agent has no router.
func (s *system) listenerSet(agent string) []string {
	s.t.Helper()
	code, body := s.do("GET", "/api/v3/agents/"+agent+"/router", nil)
	if code == http.StatusNotFound {
		return nil
	}
	var doc struct {
		Bridges struct {
			TCPListeners map[string]json.RawMessage `json:"tcpListeners"`
		} `json:"bridges"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		s.t.Fatalf("GET router of %s: %d %s", agent, code, body)
	}
	out := []string{}
	for name := range doc.Bridges.TCPListeners {
		if svc, ok := strings.CutSuffix(name, "-listener"); ok {
			out = append(out, svc)
		}
	}
	sort.Strings(out)
	return out
}

// hasRouter reports whether GET /agents/{agent}/router answers a document.
func (s *system) hasRouter(agent string) bool {
	s.t.Helper()
	code, body := s.do("GET", "/api/v3/agents/"+agent+"/router", nil)
	if code != http.StatusOK && code != http.StatusNotFound {
		s.t.Fatalf("GET router of %s: %d %s", agent, code, body)
	}
	return code == http.StatusOK
}

// waitListeners waits until an agent's router listens for exactly want.
func (s *system) waitListeners(agent string, want ...string) {
	s.t.Helper()
	sort.Strings(want)
	s.waitFor(agent+" listening for "+fmt.Sprint(want), 20*time.Second, func() (bool, string) {
		got := s.listenerSet(agent)
		return slices.Equal(got, want) || (len(want) == 0 && len(got) == 0), fmt.Sprint(got)
	})
}

// uploadAgentYAML sends a kind: Agent or AgentConfig document.
func (s *system) uploadAgentYAML(doc string) {
	s.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile("agent", "agent.yaml")
	if err == nil {
		_, err = io.WriteString(fw, doc)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", s.url+"/api/v3/agents/yaml", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := adminClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		s.t.Fatalf("POST /agents/yaml: %d %s", resp.StatusCode, body)
	}
}

func (s *system) tagAgent(agent string, tags ...string) {
	s.t.Helper()
	if tags == nil {
		tags = []string{}
	}
	s.must(http.StatusOK, "PATCH", "/api/v3/agents/"+agent, map[string]any{"tags": tags}, nil)
}

type distributionOut struct {
	Agent          string     `json:"agent"`
	AgentName      string     `json:"agentName"`
	Listening      bool       `json:"listening"`
	Wanted         bool       `json:"wanted"`
	Reason         string     `json:"reason"`
	WrittenAt      *time.Time `json:"writtenAt"`
	AcknowledgedAt *time.Time `json:"acknowledgedAt"`
}

// distribution returns the distribution view of GET /services/{name}, by
// agent name.
func (s *system) distribution(name string) map[string]distributionOut {
	s.t.Helper()
	var out struct {
		Distribution []distributionOut `json:"distribution"`
	}
	s.must(http.StatusOK, "GET", "/api/v3/services/"+name, nil, &out)
	m := map[string]distributionOut{}
	for _, d := range out.Distribution {
		m[d.AgentName] = d
	}
	return m
}

// TestDistributionSeedTable is seed 001's "Which nodes listen" table, with
// its listener objects byte for byte, and the visibility endpoints.
func TestDistributionSeedTable(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		plantA := s.agent(map[string]any{"name": "plant-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}, "tags": []string{tagPrefix + ": checkout"}})
		s.agent(map[string]any{"name": "plant-b", "routerMode": "edge", "upstreamRouters": []string{"hub"}, "tags": []string{tagPrefix + ": all"}})
		s.agent(map[string]any{"name": "plant-c", "routerMode": "edge", "upstreamRouters": []string{"hub"}, "tags": []string{"checkout"}})
		s.agent(map[string]any{"name": "plant-d", "routerMode": "edge", "tags": []string{tagPrefix + ":checkout"}})
		// The checkout backend runs on plant-c, which is not selected: it
		// gets the connector, not the listener.
		s.microservice(map[string]any{"uuid": checkoutUUID, "application": "orders", "name": "checkout", "agent": "plant-c"})

		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080,
			"tags": []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}}, nil)
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "payments", "type": "external", "resource": "203.0.113.20", "targetPort": 443, "tags": []string{"payments"}}, nil)
		checkout := s.waitStatus("checkout", "ready")
		payments := s.waitStatus("payments", "ready")

		s.waitListeners("plant-a", "checkout")
		s.waitListeners("plant-b", "checkout", "payments")
		s.waitListeners("hub", "checkout", "payments")
		s.waitListeners("plant-c")
		s.waitListeners("plant-d")
		want := fmt.Sprintf(`{"name":"checkout-listener","port":"%d","address":"checkout"}`, checkout.BridgePort)
		for _, agent := range []string{"plant-a", "plant-b"} {
			if l, _ := s.bridges(agent); string(l["checkout-listener"]) != want {
				t.Errorf("%s: checkout-listener %s, want %s", agent, l["checkout-listener"], want)
			}
		}
		if l, _ := s.bridges("plant-b"); string(l["payments-listener"]) != fmt.Sprintf(`{"name":"payments-listener","port":"%d","address":"payments"}`, payments.BridgePort) {
			t.Errorf("plant-b: payments-listener %s", l["payments-listener"])
		}
		if _, c := s.bridges("plant-c"); c["checkout-connector"] == nil {
			t.Errorf("plant-c lacks the checkout connector of the microservice it runs")
		}

		// Per service: who listens, why, and whether the agent applied it.
		d := s.distribution("checkout")
		if len(d) != 3 {
			t.Errorf("checkout distribution %+v, want hub, plant-a, plant-b", d)
		}
		for name, reason := range map[string]string{"hub": "hub", "plant-a": tagPrefix + ": checkout", "plant-b": tagPrefix + ": all"} {
			e := d[name]
			if !e.Listening || !e.Wanted || e.Reason != reason || e.WrittenAt == nil || e.AcknowledgedAt != nil {
				t.Errorf("checkout on %s: %+v, want listening for %q, written, not yet acknowledged", name, e, reason)
			}
		}
		// plant-a pulls its changes and acknowledges them.
		auth := func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+plantA.Token) }
		var ch struct {
			LastUpdated int64 `json:"lastUpdated"`
		}
		s.agentCall(auth, "GET", "/api/v3/agent/config/changes", nil, http.StatusOK, &ch)
		s.agentCall(auth, "PATCH", "/api/v3/agent/config/changes", map[string]any{"lastUpdated": ch.LastUpdated}, http.StatusNoContent, nil)
		d = s.distribution("checkout")
		if e := d["plant-a"]; e.AcknowledgedAt == nil || e.AcknowledgedAt.Before(*e.WrittenAt) {
			t.Errorf("checkout on plant-a after its acknowledgement: %+v", e)
		}
		if e := d["plant-b"]; e.AcknowledgedAt != nil {
			t.Errorf("plant-b acknowledged without asking: %+v", e)
		}

		// Per agent: what it listens for and which tag matched.
		var svcs []struct {
			Service      string `json:"service"`
			BridgePort   *int   `json:"bridgePort"`
			Reason       string `json:"reason"`
			Listening    bool   `json:"listening"`
			Acknowledged bool   `json:"acknowledged"`
		}
		s.must(http.StatusOK, "GET", "/api/v3/agents/plant-b/services", nil, &svcs)
		if len(svcs) != 2 || svcs[0].Service != "checkout" || svcs[1].Service != "payments" ||
			svcs[0].Reason != tagPrefix+": all" || !svcs[1].Listening || *svcs[1].BridgePort != payments.BridgePort {
			t.Errorf("plant-b services %+v", svcs)
		}
		s.must(http.StatusOK, "GET", "/api/v3/agents/plant-a/services", nil, &svcs)
		if len(svcs) != 1 || !svcs[0].Acknowledged || svcs[0].Reason != tagPrefix+": checkout" {
			t.Errorf("plant-a services %+v", svcs)
		}
		s.must(http.StatusOK, "GET", "/api/v3/agents/plant-c/services", nil, &svcs)
		if len(svcs) != 0 {
			t.Errorf("plant-c services %+v, want none", svcs)
		}

		// The preview says why plant-c and plant-d do not listen.
		var p struct {
			Agents []struct {
				AgentName   string           `json:"agentName"`
				WouldListen bool             `json:"wouldListen"`
				Reasons     []service.Reason `json:"reasons"`
			} `json:"agents"`
		}
		s.must(http.StatusOK, "GET", "/api/v3/services/checkout/distribution", nil, &p)
		for _, a := range p.Agents {
			switch a.AgentName {
			case "plant-c":
				if a.WouldListen || len(a.Reasons) != 1 || a.Reasons[0].Code != service.ReasonNoPrefix {
					t.Errorf("preview plant-c %+v", a)
				}
			case "plant-d":
				if a.WouldListen || len(a.Reasons) != 1 || a.Reasons[0].Code != service.ReasonNoSpace {
					t.Errorf("preview plant-d %+v", a)
				}
			case "plant-a", "plant-b", "hub":
				if !a.WouldListen {
					t.Errorf("preview %s %+v, want it to listen", a.AgentName, a)
				}
			}
		}
	})
}

// agentCall is a request with an agent's credential.
func (s *system) agentCall(auth func(*http.Request), method, path string, body any, want int, into any) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	auth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			s.t.Fatal(err)
		}
	}
}

// TestDistributionTagEdits edits tags on both sides, router modes, adds an
// agent after the service exists and deletes the service at the end.
func TestDistributionTagEdits(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		s.agent(map[string]any{"name": "plant-a", "tags": []string{tagPrefix + ": checkout"}})
		s.agent(map[string]any{"name": "plant-b", "tags": []string{tagPrefix + ": all"}})
		s.agent(map[string]any{"name": "plant-c", "tags": []string{"checkout"}})
		s.agent(map[string]any{"name": "plant-p", "tags": []string{tagPrefix + ": payments"}})
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "checkout", "type": "external", "resource": "203.0.113.10", "targetPort": 443, "tags": []string{"checkout"}}, nil)
		s.waitStatus("checkout", "ready")
		s.waitListeners("plant-a", "checkout")
		s.waitListeners("plant-b", "checkout")
		s.waitListeners("plant-c")
		s.waitListeners("plant-p")

		// Agent side: the prefixed tag adds the listener, removing it
		// removes it, the tag without the space selects nothing.
		s.tagAgent("plant-c", "site-3", tagPrefix+": checkout")
		s.waitListeners("plant-c", "checkout")
		s.tagAgent("plant-c", "site-3")
		s.waitListeners("plant-c")
		s.tagAgent("plant-c", tagPrefix+":checkout")
		s.waitListeners("plant-c")
		// kind: AgentConfig (the YAML replaces the agent's tags).
		s.uploadAgentYAML("apiVersion: iofog.org/v3\nkind: AgentConfig\nmetadata:\n  name: plant-c\n  tags:\n    - \"" + tagPrefix + ": checkout\"\nspec:\n  routerMode: edge\n")
		s.waitListeners("plant-c", "checkout")
		s.uploadAgentYAML("apiVersion: iofog.org/v3\nkind: Agent\nmetadata:\n  name: plant-c\nspec:\n  routerMode: edge\n")
		s.waitListeners("plant-c")

		// Service side: the union of old and new selections is reconciled.
		s.must(http.StatusNoContent, "PATCH", "/api/v3/services/checkout", map[string]any{"tags": []string{"payments"}}, nil)
		s.waitStatus("checkout", "ready")
		s.waitListeners("plant-a")
		s.waitListeners("plant-p", "checkout")
		s.waitListeners("plant-b", "checkout")
		// A tag with ':' is never a token.
		s.must(http.StatusNoContent, "PATCH", "/api/v3/services/checkout", map[string]any{"tags": []string{"payments:x"}}, nil)
		s.waitStatus("checkout", "ready")
		s.waitListeners("plant-p")
		s.waitListeners("plant-b", "checkout")
		s.must(http.StatusNoContent, "PATCH", "/api/v3/services/checkout", map[string]any{"tags": []string{"checkout", "payments"}}, nil)
		s.waitListeners("plant-a", "checkout")
		s.waitListeners("plant-p", "checkout")

		// routerMode none: no router, no listeners; back to edge: back.
		s.must(http.StatusOK, "PATCH", "/api/v3/agents/plant-b", map[string]any{"routerMode": "none"}, nil)
		s.waitFor("plant-b's router to go", 20*time.Second, func() (bool, string) { return !s.hasRouter("plant-b"), "" })
		if d := s.distribution("checkout"); d["plant-b"].Listening || d["plant-b"].Wanted {
			t.Errorf("plant-b with routerMode none in the distribution: %+v", d["plant-b"])
		}
		s.must(http.StatusOK, "PATCH", "/api/v3/agents/plant-b", map[string]any{"routerMode": "edge"}, nil)
		s.waitListeners("plant-b", "checkout")

		// Agents added after the service exists.
		s.agent(map[string]any{"name": "late-1", "tags": []string{tagPrefix + ": all"}})
		s.agent(map[string]any{"name": "late-2", "tags": []string{tagPrefix + ": payments"}})
		s.agent(map[string]any{"name": "late-3", "routerMode": "none", "tags": []string{tagPrefix + ": all"}})
		s.waitListeners("late-1", "checkout")
		s.waitListeners("late-2", "checkout")
		if s.hasRouter("late-3") {
			t.Errorf("late-3 (routerMode none) has a router")
		}

		// Delete after all those edits: no listener of it anywhere.
		s.must(http.StatusNoContent, "DELETE", "/api/v3/services/checkout", nil, nil)
		for _, a := range []string{"hub", "plant-a", "plant-b", "plant-c", "plant-p", "late-1", "late-2"} {
			s.waitListeners(a)
		}
	})
}

// TestDistributionPrefixConfigurable: SERVICE_ANNOTATION_TAG changes the
// prefix on both sides.
func TestDistributionPrefixConfigurable(t *testing.T) {
	const prefix = "example.com/listen"
	s := newSystem(t, "sqlite", 1, withTagPrefix(prefix))
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true})
	s.agent(map[string]any{"name": "old", "tags": []string{tagPrefix + ": checkout"}})
	s.agent(map[string]any{"name": "new", "tags": []string{prefix + ": checkout"}})
	s.agent(map[string]any{"name": "new-all", "tags": []string{prefix + ": all"}})
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "type": "external", "resource": "203.0.113.10", "targetPort": 443, "tags": []string{"checkout"}}, nil)
	s.waitStatus("checkout", "ready")
	s.waitListeners("new", "checkout")
	s.waitListeners("new-all", "checkout")
	s.waitListeners("old")
	s.tagAgent("old", prefix+": checkout")
	s.waitListeners("old", "checkout")
}

// TestDistributionConcurrentEdits mixes service creates, tag edits and
// deletes with agent tag and routerMode edits in parallel; once settled,
// every agent listens for exactly what the rule selects from the final
// state as the API reads it back.
func TestDistributionConcurrentEdits(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 2)
		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		const agents, services, rounds = 24, 36, 12
		agentTags := [][]string{
			{}, {tagPrefix + ": all"}, {tagPrefix + ": a"}, {tagPrefix + ": b"}, {tagPrefix + ": a", tagPrefix + ": c"},
			{tagPrefix + ":a"}, {"a"}, {tagPrefix + ": x:y"}, {"site", tagPrefix + ": c"},
		}
		serviceTags := [][]string{{}, {"a"}, {"b"}, {"c"}, {"a", "b"}, {"x:y"}, {"all"}, {"c", "k: v"}}
		for i := range agents {
			s.agent(map[string]any{"name": fmt.Sprintf("edge-%02d", i), "tags": agentTags[i%len(agentTags)]})
		}

		var wg sync.WaitGroup
		errs := make(chan string, 1000)
		try := func(method, path string, body any, ok ...int) {
			code, out := s.do(method, path, body)
			if !slices.Contains(ok, code) {
				errs <- fmt.Sprintf("%s %s: %d %s", method, path, code, out)
			}
		}
		// Service workers: each owns a slice of the names.
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for r := range rounds {
					for i := w; i < services; i += 3 {
						name := fmt.Sprintf("svc-%02d", i)
						tags := serviceTags[rng.IntN(len(serviceTags))]
						switch (r + i) % 4 {
						case 0, 1:
							try("POST", "/api/v3/services", map[string]any{"name": name, "type": "external",
								"resource": "203.0.113.10", "targetPort": 443, "tags": tags}, http.StatusCreated, http.StatusConflict)
						case 2:
							try("PATCH", "/api/v3/services/"+name, map[string]any{"tags": tags}, http.StatusNoContent, http.StatusNotFound)
						case 3:
							if rng.IntN(2) == 0 {
								try("DELETE", "/api/v3/services/"+name, nil, http.StatusNoContent, http.StatusNotFound)
							}
						}
					}
				}
			}()
		}
		// Agent workers: tags and router modes.
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 2))
				for range rounds * 2 {
					for i := w; i < agents; i += 3 {
						name := fmt.Sprintf("edge-%02d", i)
						body := map[string]any{"tags": agentTags[rng.IntN(len(agentTags))]}
						if rng.IntN(6) == 0 {
							body["routerMode"] = []string{"edge", "none", "interior"}[rng.IntN(3)]
						}
						try("PATCH", "/api/v3/agents/"+name, body, http.StatusOK)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}

		// Settled: every service's latest generation reconciled.
		var svcs []serviceOut
		s.must(http.StatusOK, "GET", "/api/v3/services", nil, &svcs)
		for _, svc := range svcs {
			s.waitStatus(svc.Name, "ready")
		}
		var all []struct {
			Name          string   `json:"name"`
			RouterMode    string   `json:"routerMode"`
			DefaultRouter bool     `json:"defaultRouter"`
			Tags          []string `json:"tags"`
		}
		s.must(http.StatusOK, "GET", "/api/v3/agents", nil, &all)
		expect := func(i int) []string {
			a := all[i]
			if a.RouterMode == "none" {
				return nil
			}
			want := []string{}
			for _, svc := range svcs {
				if a.DefaultRouter || s.tags.Selects(a.Tags, svc.Tags) {
					want = append(want, svc.Name)
				}
			}
			return want
		}
		s.waitFor("every agent listening for what the rule selects", 60*time.Second, func() (bool, string) {
			var diffs []string
			for i, a := range all {
				want, got := expect(i), s.listenerSet(a.Name)
				if a.RouterMode == "none" {
					if s.hasRouter(a.Name) {
						diffs = append(diffs, a.Name+" (routerMode none) has a router")
					}
					continue
				}
				if !slices.Equal(want, got) {
					diffs = append(diffs, fmt.Sprintf("%s %v: got %v want %v", a.Name, a.Tags, got, want))
				}
			}
			return len(diffs) == 0, strings.Join(diffs, "; ")
		})
		// And the per-service views agree with the routers.
		for _, svc := range svcs {
			for name, d := range s.distribution(svc.Name) {
				if !d.Listening || !d.Wanted {
					t.Errorf("%s on %s after settling: %+v", svc.Name, name, d)
				}
			}
		}
		t.Logf("%d services, %d agents settled", len(svcs), len(all))
	})
}

// TestDistributionStoreDirectionsAgree is the property of the one rule on
// the SQL that implements it: for random agents and services (tags drawn
// to hit every edge of the rule), "service → agents" (the fan-out query
// and the distribution view) and "agent → services" (the listeners a
// reconcile writes) always agree with service.TagRule.Selects.
func TestDistributionStoreDirectionsAgree(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		st := storetest.Open(t, dialect)
		rule := service.TagRule{Prefix: tagPrefix}
		tokens := []string{"a", "b", "all", "checkout", " a", "a ", "A", "x:y", "x=y", "", "a:b"}
		agentTag := func(rng *rand.Rand) string {
			tok := tokens[rng.IntN(len(tokens))]
			switch rng.IntN(6) {
			case 0:
				return tagPrefix + ":" + tok // no space
			case 1:
				return tok // bare
			case 2:
				return "other/tag: " + tok
			default:
				return tagPrefix + ": " + tok
			}
		}
		ctx := context.Background()
		for round := range 8 {
			rng := rand.New(rand.NewPCG(uint64(round), 7))
			var agents []inventory.Agent
			var svcs []service.Service
			err := st.InTx(ctx, func(tx *store.Tx) error {
				for i := range 30 {
					a := inventory.Agent{UUID: uuid.NewString(), Name: fmt.Sprintf("r%d-a%02d", round, i), RouterMode: inventory.RouterEdge,
						Tags: []string{}, UpstreamRouters: []string{}}
					if rng.IntN(8) == 0 {
						a.RouterMode = inventory.RouterNone
					}
					for range rng.IntN(4) {
						a.Tags = append(a.Tags, agentTag(rng))
					}
					if err := tx.CreateAgent(ctx, &a, a.UUID); err != nil {
						return err
					}
					agents = append(agents, a)
				}
				for i := range 20 {
					s := service.Service{Spec: service.Spec{Name: fmt.Sprintf("r%d-s%02d", round, i), Type: service.TypeExternal,
						Resource: "203.0.113.10", TargetPort: 443, DefaultBridge: service.DefaultBridge, Tags: []string{}},
						BridgePort: 10024 + round*100 + i}
					for range rng.IntN(4) {
						if tok := tokens[rng.IntN(len(tokens))]; tok != "" {
							s.Tags = append(s.Tags, tok)
						}
					}
					if err := tx.InsertService(ctx, &s); err != nil {
						return err
					}
					svcs = append(svcs, s)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = st.InTx(ctx, func(tx *store.Tx) error {
				// service → agents
				fanout := map[[2]string]bool{}
				for _, s := range svcs {
					uuids, err := tx.AgentsWithTags(ctx, rule.SelectingAgentTags(s.Tags))
					if err != nil {
						return err
					}
					for _, u := range uuids {
						fanout[[2]string{u, s.Name}] = true
					}
					view, err := tx.AgentsSelectedBy(ctx, rule.SelectingAgentTags(s.Tags))
					if err != nil {
						return err
					}
					if len(view) != len(uuids) {
						t.Errorf("service %s %q: fan-out reaches %d agents, the distribution view shows %d", s.Name, s.Tags, len(uuids), len(view))
					}
				}
				// agent → services, and both against the rule
				for _, a := range agents {
					toks, all := rule.AgentTokens(a.Tags)
					ls, err := tx.ListenerServices(ctx, a.UUID, toks, all, "")
					if err != nil {
						return err
					}
					listens := map[string]bool{}
					for _, l := range ls {
						listens[l.Service] = true
					}
					for _, s := range svcs {
						want := a.HasRouter() && rule.Selects(a.Tags, s.Tags)
						if got := fanout[[2]string{a.UUID, s.Name}]; got != want {
							t.Errorf("service→agents: %s %q reaches agent %q = %v, rule says %v", s.Name, s.Tags, a.Tags, got, want)
						}
						if a.HasRouter() && listens[s.Name] != want {
							t.Errorf("agent→services: agent %q listens for %s %q = %v, rule says %v", a.Tags, s.Name, s.Tags, listens[s.Name], want)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}
