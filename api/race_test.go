package api

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestWritesRacingADeleteNeverFail: writes to one service and one agent
// racing their deletes (JSON and YAML PATCH, reconcile, token rotation,
// agent PATCH) answer 2xx, 404 or 409, never a 500, on both stores; after
// each round both are gone with everything they held (the store is as
// before the round), and no credential minted during the race still works.
func TestWritesRacingADeleteNeverFail(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		// Every rotated token is tried once it is dead: a failed-auth budget
		// that never runs dry, so each answers what it is (401), not 429.
		a, st, _ := newTestAPI(t, dialect, func(o *Options) {
			o.Limits = DefaultLimits
			o.Limits.AuthFailureBurst = 1 << 20
		})
		createAgent(t, a, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		before := snapshot(t, st)
		const rounds, each = 12, 4
		for round := range rounds {
			createService(t, a, map[string]any{"name": "racy", "type": "external", "resource": "vendor.example.com",
				"targetPort": 443, "tags": []string{"racy"}})
			createAgent(t, a, map[string]any{"name": "racer", "host": "10.0.0.7", "upstreamRouters": []string{"hub"},
				"tags": []string{"service.iofog.org/tag: racy"}})

			type answer struct {
				what   string
				status int
				body   []byte
				token  string
			}
			var requests []func() answer
			add := func(n int, what string, send func(i int) *testResponse) {
				for i := range n {
					requests = append(requests, func() answer {
						r := send(i)
						return answer{what: what, status: r.Status, body: r.Body}
					})
				}
			}
			add(each, "JSON PATCH service", func(i int) *testResponse {
				return a.JSON(http.MethodPatch, servicesPath+"/racy", map[string]any{"targetPort": 1000 + i, "tags": []string{"racy", fmt.Sprint(i)}})
			})
			add(each, "YAML PATCH service", func(i int) *testResponse {
				return a.Upload(http.MethodPatch, servicesPath+"/yaml/racy", "service", fmt.Sprintf(
					"kind: Service\nmetadata:\n  name: racy\n  tags: [racy, y%d]\nspec:\n  type: external\n  resource: vendor.example.com\n  targetPort: %d\n", i, 2000+i))
			})
			add(each, "reconcile service", func(int) *testResponse {
				return a.Do(http.MethodPost, servicesPath+"/racy/reconcile", nil)
			})
			add(1, "DELETE service", func(int) *testResponse { return a.Do(http.MethodDelete, servicesPath+"/racy", nil) })
			add(each, "PATCH agent", func(i int) *testResponse {
				return a.JSON(http.MethodPatch, "/api/v3/agents/racer", map[string]any{"host": fmt.Sprintf("10.0.1.%d", i), "tags": []string{fmt.Sprint(i)}})
			})
			add(1, "DELETE agent", func(int) *testResponse { return a.Do(http.MethodDelete, "/api/v3/agents/racer", nil) })
			rotations := len(requests)
			add(each, "rotate agent token", func(int) *testResponse {
				return a.Do(http.MethodPost, "/api/v3/agents/racer/token", nil)
			})

			answers := make([]answer, len(requests))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, send := range requests {
				wg.Go(func() {
					<-start
					answers[i] = send()
				})
			}
			close(start)
			wg.Wait()

			var tokens []string
			for i, ans := range answers {
				switch {
				case ans.status == http.StatusNotFound || ans.status == http.StatusConflict:
				case ans.status < 200 || ans.status > 299:
					t.Errorf("round %d: %s answered %d: %s", round, ans.what, ans.status, ans.body)
				case i >= rotations:
					var rotated struct{ Token string }
					(&testResponse{t: t, req: ans.what, Status: ans.status, Body: ans.body}).Decode(&rotated)
					tokens = append(tokens, rotated.Token)
				}
			}
			// Whichever order they ran in, both deletes won in the end.
			a.Do(http.MethodGet, servicesPath+"/racy", nil).Want(http.StatusNotFound)
			a.Do(http.MethodGet, "/api/v3/agents/racer", nil).Want(http.StatusNotFound)
			for _, token := range tokens {
				a.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(token)...).Want(http.StatusUnauthorized)
			}
			if after := snapshot(t, st); after != before {
				t.Fatalf("round %d left the store changed:\nbefore %s\nafter  %s", round, before, after)
			}
		}
	})
}

// TestDeleteRacingCreatesLeavesNoOrphan: on two API replicas, a delete of
// a microservice (or an agent, or the default router) racing creates of
// services on it ends with
// one or the other, never both: either it is gone and no service refers
// to it, or the creates that won are there and the delete answered 409.
// Sequentially that was always so; racing, the "in use" check and the
// creates read each other's state before either committed (33 services
// were once left on a deleted backend).
func TestDeleteRacingCreatesLeavesNoOrphan(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		one, st, rec := newTestAPI(t, dialect)
		two := serveTestAPI(t, testOptions(st, rec))
		createAgent(t, one, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		// Rounds race the default router's delete (while nothing else
		// refers to it), then a microservice's, an agent's, and so on.
		for round := range 7 {
			backend := fmt.Sprintf("fog-%d", round)
			var typ, ref, deletePath string
			switch {
			case round == 0:
				typ, ref, deletePath = "external", "203.0.113.10", "/api/v3/agents/hub"
			case round%2 == 0:
				createAgent(t, one, map[string]any{"name": backend, "upstreamRouters": []string{"hub"}})
				m := createMicroservice(t, one, map[string]any{"application": "race", "name": backend, "agent": backend})
				typ, ref, deletePath = "microservice", "race/"+backend, "/api/v3/microservices/"+m.UUID
			default:
				createAgent(t, one, map[string]any{"name": backend, "upstreamRouters": []string{"hub"}})
				typ, ref, deletePath = "agent", backend, "/api/v3/agents/"+backend
			}
			const creates = 12
			statuses := make([]int, creates+1)
			var wg sync.WaitGroup
			for i := range creates {
				if i == 0 { // sent first: the creates race its commit
					wg.Go(func() {
						statuses[creates] = []*testAPI{two, one}[round%2].Do(http.MethodDelete, deletePath, nil).Status
					})
				}
				api := []*testAPI{one, two}[i%2]
				wg.Go(func() {
					statuses[i] = api.JSON(http.MethodPost, servicesPath, map[string]any{"name": fmt.Sprintf("r%d-%d", round, i),
						"type": typ, "resource": ref, "targetPort": 8080}).Status
				})
			}
			wg.Wait()

			created := 0
			for i, s := range statuses[:creates] {
				switch s {
				case http.StatusCreated:
					created++
				case http.StatusBadRequest, http.StatusConflict:
				default:
					t.Errorf("round %d: create %d answered %d", round, i, s)
				}
			}
			deleted := statuses[creates] == http.StatusNoContent
			if !deleted && statuses[creates] != http.StatusConflict {
				t.Errorf("round %d: the delete answered %d", round, statuses[creates])
			}
			if deleted && created > 0 {
				t.Errorf("round %d: %s deleted while %d services were created on it", round, ref, created)
			}
			if !deleted && created == 0 {
				t.Errorf("round %d: the delete answered 409 with no service on %s", round, ref)
			}
			if round == 0 && deleted {
				createAgent(t, one, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
			}
		}
	})
}

// TestAgentDeleteRacingAnythingNeverFails: an agent's DELETE racing
// another DELETE, PATCHes, token rotations, YAML replaces, a service
// create on it, reads of its router and its own polls, on two API
// replicas, answers each with a 2xx, 304, 400, 401, 404 or 409, never a
// 500 (issue 52, item 4).
func TestAgentDeleteRacingAnythingNeverFails(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		one, st, rec := newTestAPI(t, dialect, func(o *Options) {
			o.Limits = DefaultLimits
			o.Limits.AuthFailureBurst = 1 << 20
		})
		two := serveTestAPI(t, func() Options {
			o := testOptions(st, rec)
			o.Limits = DefaultLimits
			o.Limits.AuthFailureBurst = 1 << 20
			return o
		}())
		createAgent(t, one, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		for round := range 8 {
			racer := createAgent(t, one, map[string]any{"name": "racer", "upstreamRouters": []string{"hub"}})
			agent := bearer(racer.Token)
			type call struct {
				what string
				send func(a *testAPI, i int) int
			}
			calls := []call{
				{"DELETE", func(a *testAPI, _ int) int { return a.Do(http.MethodDelete, "/api/v3/agents/racer", nil).Status }},
				{"PATCH", func(a *testAPI, i int) int {
					return a.JSON(http.MethodPatch, "/api/v3/agents/racer", map[string]any{"tags": []string{fmt.Sprint(i)}}).Status
				}},
				{"token", func(a *testAPI, _ int) int { return a.Do(http.MethodPost, "/api/v3/agents/racer/token", nil).Status }},
				{"YAML", func(a *testAPI, i int) int {
					return a.Upload(http.MethodPost, "/api/v3/agents/yaml", "agent", fmt.Sprintf(
						"kind: AgentConfig\nmetadata:\n  name: racer\n  tags: [y%d]\nspec:\n  routerMode: edge\n  upstreamRouters: [hub]\n", i)).Status
				}},
				{"create", func(a *testAPI, i int) int {
					return a.JSON(http.MethodPost, servicesPath, map[string]any{"name": fmt.Sprintf("on-racer-%d-%d", round, i),
						"type": "agent", "resource": "racer", "targetPort": 22}).Status
				}},
				{"router GET", func(a *testAPI, _ int) int { return a.Do(http.MethodGet, "/api/v3/agents/racer/router", nil).Status }},
				{"poll", func(a *testAPI, _ int) int { return a.Do(http.MethodGet, "/api/v3/agent/router", nil, agent...).Status }},
				{"changes", func(a *testAPI, _ int) int {
					return a.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, agent...).Status
				}},
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i := range 2 {
				for _, c := range calls {
					wg.Go(func() {
						status := c.send([]*testAPI{one, two}[i], i)
						if status >= 500 {
							mu.Lock()
							t.Errorf("round %d: %s answered %d", round, c.what, status)
							mu.Unlock()
						}
					})
				}
			}
			wg.Wait()
			// The next round starts from no racer.
			for _, name := range []string{"racer"} {
				for _, s := range listServices(t, one) {
					if strings.HasPrefix(s.Name, "on-racer-") {
						one.Do(http.MethodDelete, servicesPath+"/"+s.Name, nil)
					}
				}
				if r := one.Do(http.MethodDelete, "/api/v3/agents/"+name, nil); r.Status != http.StatusNoContent && r.Status != http.StatusNotFound {
					t.Fatalf("round %d: clearing %s: %d %s", round, name, r.Status, r.Body)
				}
			}
		}
	})
}
