package api

import (
	"fmt"
	"net/http"
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
