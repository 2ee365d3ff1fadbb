package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"svcbridge/store"
)

// eventLines are events as a test compares them: service, reason,
// generation.
func eventLines(es []store.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s %s %s g%d", e.Service, e.Type, e.Reason, e.Generation)
	}
	return out
}

func getEvents(t *testing.T, a *testAPI, path string) ([]store.Event, string) {
	t.Helper()
	var es []store.Event
	r := a.Do(http.MethodGet, path, nil).Want(http.StatusOK).Decode(&es)
	return es, r.Header.Get(ContinueHeader)
}

// TestServiceEvents: each API write records its event in its own
// transaction (a dry run and a reconcile Temporal refused record none),
// newest first; a deleted service's events stay readable; the fleet-wide
// list pages as the other lists do.
func TestServiceEvents(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := newPlanes(t, dialect)
		newInventory(t, p.remote)
		ext := func(name string) map[string]any {
			return map[string]any{"name": name, "type": "external", "resource": "vendor.example.com", "targetPort": 443}
		}
		createService(t, p.remote, ext("vendor"))
		p.remote.JSON(http.MethodPost, servicesPath+"?dryRun=true", ext("dry")).Want(http.StatusCreated)
		p.remote.JSON(http.MethodPatch, servicesPath+"/vendor?dryRun=true", map[string]any{"targetPort": 1}).Want(http.StatusOK)
		patchService(t, p.remote, "vendor", map[string]any{"targetPort": 444})
		p.remote.Do(http.MethodPost, servicesPath+"/vendor/reconcile", nil).Want(http.StatusAccepted)
		p.rec.FailWith(fmt.Errorf("connection refused"))
		p.remote.Do(http.MethodPost, servicesPath+"/vendor/reconcile", nil).Want(http.StatusServiceUnavailable)
		p.rec.FailWith(nil)
		createService(t, p.remote, ext("other"))
		p.remote.Do(http.MethodDelete, servicesPath+"/vendor", nil).Want(http.StatusNoContent)

		vendor, _ := getEvents(t, p.remote, servicesPath+"/vendor/events")
		want := []string{"vendor Normal Deleted g0", "vendor Normal ReconcileRequested g2", "vendor Normal Updated g2", "vendor Normal Created g1"}
		if got := eventLines(vendor); !slices.Equal(got, want) {
			t.Fatalf("vendor's events = %q, want %q", got, want)
		}
		if vendor[3].Message != "created with bridge port 10024" {
			t.Errorf("created: %q", vendor[3].Message)
		}
		p.remote.Do(http.MethodGet, servicesPath+"/dry/events", nil).WantError(404, "NotFoundError", "Service with name dry not found")

		all, _ := getEvents(t, p.remote, "/api/v3/events")
		if got := eventLines(all); !slices.Equal(got, append(want[:1:1], append([]string{"other Normal Created g1"}, want[1:]...)...)) {
			t.Fatalf("all events = %q", got)
		}
		var paged []store.Event
		path := "/api/v3/events?limit=2"
		for range len(all) {
			page, next := getEvents(t, p.remote, path)
			paged = append(paged, page...)
			if next == "" {
				break
			}
			path = "/api/v3/events?" + url.Values{"limit": {"2"}, "continue": {next}}.Encode()
		}
		if !slices.Equal(eventLines(paged), eventLines(all)) {
			t.Fatalf("paged events = %q, want %q", eventLines(paged), eventLines(all))
		}
		// A token of another list is no event cursor.
		_, next := getEvents(t, p.remote, servicesPath+"/other/events?limit=1")
		if next != "" {
			t.Fatalf("one event of other, yet a next page: %q", next)
		}
		token := continueToken([]string{"other"})
		p.remote.Do(http.MethodGet, "/api/v3/events?continue="+token, nil).
			WantError(400, "ValidationError", "Query parameter 'continue' is not a token this API gave")
	})
}

// TestAgentChangeEventsNameTheAgent: the reconciles an agent change asks
// for are recorded as requested by that change, naming the agent, on the
// services that depend on it only; a dry run records none, and a reconcile
// asked for through the API still says so.
func TestAgentChangeEventsNameTheAgent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		api.JSON(http.MethodPost, "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
		api.JSON(http.MethodPost, "/api/v3/agents", map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub"}}).Want(201)
		createService(t, api, map[string]any{"name": "ssh", "type": "agent", "resource": "fog-a", "targetPort": 22})
		createService(t, api, map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
		messages := func(name string) []string {
			es, _ := getEvents(t, api, servicesPath+"/"+name+"/events")
			var out []string
			for _, e := range es {
				out = append(out, fmt.Sprintf("%s %s x%d", e.Reason, e.Message, e.Count))
			}
			return out
		}
		created := func(port int) string { return fmt.Sprintf("Created created with bridge port %d x1", port) }

		api.JSON(http.MethodPatch, "/api/v3/agents/fog-a?dryRun=true", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}).Want(200)
		api.JSON(http.MethodPatch, "/api/v3/agents/fog-a", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}).Want(200)
		if got, want := messages("ssh"), []string{"ReconcileRequested reconcile requested by a change of agent fog-a x1", created(10024)}; !slices.Equal(got, want) {
			t.Errorf("ssh's events after fog-a changed: %q, want %q", got, want)
		}
		if got, want := messages("vendor"), []string{created(10025)}; !slices.Equal(got, want) {
			t.Errorf("vendor, which does not depend on fog-a: %q, want %q", got, want)
		}

		api.JSON(http.MethodPatch, "/api/v3/agents/hub", map[string]any{"host": "hub-2.example.com"}).Want(200)
		api.Do(http.MethodPost, servicesPath+"/vendor/reconcile", nil).Want(http.StatusAccepted)
		want := []string{"ReconcileRequested reconcile requested through the API x1", "ReconcileRequested reconcile requested by a change of agent hub x1", created(10025)}
		if got := messages("vendor"); !slices.Equal(got, want) {
			t.Errorf("vendor's events after hub changed: %q, want %q", got, want)
		}

		// A microservice moved to another agent names itself.
		api.JSON(http.MethodPost, "/api/v3/agents", map[string]any{"name": "fog-b", "upstreamRouters": []string{"hub"}}).Want(201)
		m := createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "hub"})
		createService(t, api, map[string]any{"name": "cart", "type": "microservice", "resource": "shop/cart", "targetPort": 80})
		api.JSON(http.MethodPatch, "/api/v3/microservices/"+m.UUID, map[string]any{"agent": "fog-b"}).Want(200)
		if got := messages("cart"); len(got) == 0 || got[0] != "ReconcileRequested reconcile requested by a change of microservice shop/cart x1" {
			t.Errorf("cart's events after its microservice moved: %q", got)
		}
	})
}
