package api

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

// writeListeners does what an agent reconcile does for its listeners: it
// rewrites the agent's router config (raising its change flag) and records
// the listener entries, those in rewritten as written anew.
func writeListeners(t *testing.T, st *store.Store, agentUUID string, services []string, rewritten ...string) {
	t.Helper()
	ctx := context.Background()
	err := st.InTx(ctx, func(tx *store.Tx) error {
		routers, err := tx.LockRouters(ctx, []string{agentUUID})
		if err != nil {
			return err
		}
		router, ok := routers[agentUUID]
		if !ok {
			return store.ErrNotFound
		}
		if err := tx.WriteRouter(ctx, agentUUID, store.RouterWrite{Base: router.Base}); err != nil {
			return err
		}
		have, err := tx.RouterObjects(ctx, agentUUID, "")
		if err != nil {
			return err
		}
		var write, drop []routerconfig.Held
		changed := map[string]bool{}
		for _, s := range services {
			write = append(write, routerconfig.Held{Kind: store.KindListener, Service: s})
			changed["listener/"+s] = !slices.ContainsFunc(have, func(h routerconfig.Held) bool { return h.Service == s }) || slices.Contains(rewritten, s)
		}
		for _, h := range have {
			if !slices.Contains(services, h.Service) {
				drop = append(drop, h)
			}
		}
		return tx.WriteRouter(ctx, agentUUID, store.RouterWrite{Write: write, Rewritten: changed, Drop: drop})
	})
	if err != nil {
		t.Fatalf("write listeners of %s: %v", agentUUID, err)
	}
}

type distJSON struct {
	Agent          string     `json:"agent"`
	AgentName      string     `json:"agentName"`
	Listening      bool       `json:"listening"`
	Wanted         bool       `json:"wanted"`
	Reason         string     `json:"reason"`
	WrittenAt      *time.Time `json:"writtenAt"`
	AcknowledgedAt *time.Time `json:"acknowledgedAt"`
}

type agentSvcJSON struct {
	Service        string     `json:"service"`
	BridgePort     *int       `json:"bridgePort"`
	Reason         string     `json:"reason"`
	Listening      bool       `json:"listening"`
	Wanted         bool       `json:"wanted"`
	WrittenAt      *time.Time `json:"writtenAt"`
	Acknowledged   bool       `json:"acknowledged"`
	AcknowledgedAt *time.Time `json:"acknowledgedAt"`
}

type previewJSON struct {
	Service     string   `json:"service"`
	Tags        []string `json:"tags"`
	IgnoredTags []string `json:"ignoredTags"`
	Agents      []struct {
		AgentName   string           `json:"agentName"`
		RouterMode  string           `json:"routerMode"`
		WouldListen bool             `json:"wouldListen"`
		Listening   bool             `json:"listening"`
		Reasons     []service.Reason `json:"reasons"`
	} `json:"agents"`
}

func (p previewJSON) would() []string {
	var out []string
	for _, a := range p.Agents {
		if a.WouldListen {
			out = append(out, a.AgentName)
		}
	}
	return out
}

func (p previewJSON) codes(agent string) []service.ReasonCode {
	var out []service.ReasonCode
	for _, a := range p.Agents {
		if a.AgentName == agent {
			for _, r := range a.Reasons {
				out = append(out, r.Code)
			}
		}
	}
	return out
}

func TestDistributionViews(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		const prefix = service.DefaultTagPrefix
		hub := createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		plantA := createAgent(t, api, map[string]any{"name": "plant-a", "tags": []string{"site-1", prefix + ": checkout"}})
		createAgent(t, api, map[string]any{"name": "plant-b", "tags": []string{prefix + ": all"}})
		createAgent(t, api, map[string]any{"name": "plant-c", "tags": []string{"checkout"}})
		createAgent(t, api, map[string]any{"name": "plant-d", "routerMode": "none", "tags": []string{prefix + ": all"}})
		createAgent(t, api, map[string]any{"name": "plant-e", "tags": []string{prefix + ":checkout"}})
		createAgent(t, api, map[string]any{"name": "plant-f", "tags": []string{prefix + ": a:b"}})
		api.JSON(http.MethodPost, "/api/v3/services", map[string]any{"name": "checkout", "type": "external",
			"resource": "203.0.113.10", "targetPort": 443,
			"tags": []string{"checkout", "service.beta.kubernetes.io/aws-load-balancer-type: nlb"}}).Want(http.StatusCreated)

		dist := func() map[string]distJSON {
			t.Helper()
			var out struct {
				Distribution []distJSON `json:"distribution"`
			}
			api.JSON(http.MethodGet, "/api/v3/services/checkout", nil).Want(http.StatusOK).Decode(&out)
			m := map[string]distJSON{}
			for _, d := range out.Distribution {
				m[d.AgentName] = d
			}
			return m
		}
		// Before any reconcile: the hub and the two selected agents are
		// pending; nobody else appears.
		d := dist()
		if len(d) != 3 {
			t.Fatalf("distribution = %+v, want hub, plant-a, plant-b", d)
		}
		for name, reason := range map[string]string{"hub": "hub", "plant-a": prefix + ": checkout", "plant-b": prefix + ": all"} {
			if e := d[name]; !e.Wanted || e.Listening || e.Reason != reason || e.WrittenAt != nil || e.AcknowledgedAt != nil {
				t.Errorf("%s before reconcile = %+v, want wanted, not listening, reason %q", name, e, reason)
			}
		}

		// The reconcile writes plant-a's listener: written, not acknowledged.
		writeListeners(t, st, plantA.UUID, []string{"checkout"})
		e := dist()["plant-a"]
		if !e.Listening || e.WrittenAt == nil || e.AcknowledgedAt != nil {
			t.Fatalf("plant-a after the write = %+v, want listening, written, not acknowledged", e)
		}
		// The agent answers its newest change, not acknowledged yet.
		configChange := func() *wire.ConfigChange {
			var a wire.Agent
			api.JSON(http.MethodGet, "/api/v3/agents/plant-a", nil).Want(http.StatusOK).Decode(&a)
			return a.ConfigChange
		}
		if c := configChange(); c == nil || c.Acknowledged || time.Time(c.ChangedAt).IsZero() {
			t.Fatalf("plant-a's configChange after the write = %+v, want one not acknowledged", c)
		}
		agentAuth := bearer(plantA.Token)
		var ch store.Changes
		api.JSON(http.MethodGet, "/api/v3/agent/config/changes", nil, agentAuth...).Want(http.StatusOK).Decode(&ch)
		// An acknowledgement of an older change does not cover it.
		api.JSON(http.MethodPatch, "/api/v3/agent/config/changes", map[string]any{"lastUpdated": ch.LastUpdated - 1}, agentAuth...).Want(http.StatusNoContent)
		if e := dist()["plant-a"]; e.AcknowledgedAt != nil {
			t.Fatalf("acknowledged by an older lastUpdated: %+v", e)
		}
		api.JSON(http.MethodPatch, "/api/v3/agent/config/changes", map[string]any{"lastUpdated": ch.LastUpdated}, agentAuth...).Want(http.StatusNoContent)
		acked := dist()["plant-a"]
		if acked.AcknowledgedAt == nil || acked.AcknowledgedAt.Before(*acked.WrittenAt) {
			t.Fatalf("after the acknowledgement = %+v, want acknowledgedAt set, not before writtenAt", acked)
		}
		if c := configChange(); c == nil || !c.Acknowledged || !time.Time(c.ChangedAt).Equal(time.UnixMilli(ch.LastUpdated)) {
			t.Fatalf("plant-a's configChange after the acknowledgement = %+v, want the change of lastUpdated %d acknowledged", c, ch.LastUpdated)
		}
		// A write that leaves the listener as it was keeps both times...
		writeListeners(t, st, plantA.UUID, []string{"checkout"})
		if e := dist()["plant-a"]; e.AcknowledgedAt == nil || !e.WrittenAt.Equal(*acked.WrittenAt) {
			t.Fatalf("an unchanged listener lost its times: %+v (before %+v)", e, acked)
		}
		// ...a rewrite of it needs a new acknowledgement.
		writeListeners(t, st, plantA.UUID, []string{"checkout"}, "checkout")
		if e := dist()["plant-a"]; e.AcknowledgedAt != nil || !e.Listening {
			t.Fatalf("a rewritten listener kept its acknowledgement: %+v", e)
		}

		// The agent's own view.
		var svcs []agentSvcJSON
		api.JSON(http.MethodGet, "/api/v3/agents/plant-a/services", nil).Want(http.StatusOK).Decode(&svcs)
		if len(svcs) != 1 || svcs[0].Service != "checkout" || svcs[0].BridgePort == nil || *svcs[0].BridgePort != 10024 ||
			svcs[0].Reason != prefix+": checkout" || !svcs[0].Listening || !svcs[0].Wanted || svcs[0].WrittenAt == nil || svcs[0].Acknowledged {
			t.Fatalf("plant-a services = %+v", svcs)
		}
		api.JSON(http.MethodGet, "/api/v3/agents/hub/services", nil).Want(http.StatusOK).Decode(&svcs)
		if len(svcs) != 1 || svcs[0].Reason != "hub" || svcs[0].Listening || !svcs[0].Wanted {
			t.Fatalf("hub services = %+v, want checkout pending for the hub", svcs)
		}
		for _, name := range []string{"plant-c", "plant-d", "plant-e", "plant-f"} {
			api.JSON(http.MethodGet, "/api/v3/agents/"+name+"/services", nil).Want(http.StatusOK).Decode(&svcs)
			if len(svcs) != 0 {
				t.Errorf("%s services = %+v, want none", name, svcs)
			}
		}
		api.JSON(http.MethodGet, "/api/v3/agents/nope/services", nil).WantError(http.StatusNotFound, "NotFoundError", "Agent nope not found")

		// The tag moves off plant-a: its listener is now a pending removal.
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-a", map[string]any{"tags": []string{"site-1"}}).Want(http.StatusOK)
		if e := dist()["plant-a"]; e.Wanted || !e.Listening || e.Reason != "" {
			t.Fatalf("plant-a after losing its tag = %+v, want listening, not wanted", e)
		}
		api.JSON(http.MethodGet, "/api/v3/agents/plant-a/services", nil).Want(http.StatusOK).Decode(&svcs)
		if len(svcs) != 1 || svcs[0].Wanted || !svcs[0].Listening || svcs[0].Reason != "" {
			t.Fatalf("plant-a services after losing its tag = %+v", svcs)
		}
		writeListeners(t, st, plantA.UUID, nil)
		if _, ok := dist()["plant-a"]; ok {
			t.Fatalf("plant-a still in the distribution after its listener went")
		}
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-a", map[string]any{"tags": []string{"site-1", prefix + ": checkout"}}).Want(http.StatusOK)

		// The preview.
		preview := func(query string) previewJSON {
			t.Helper()
			var p previewJSON
			api.JSON(http.MethodGet, "/api/v3/services/checkout/distribution"+query, nil).Want(http.StatusOK).Decode(&p)
			return p
		}
		own := preview("")
		if !slices.Equal(own.would(), []string{"hub", "plant-a", "plant-b"}) {
			t.Errorf("preview with its own tags: would listen %v", own.would())
		}
		if !slices.Equal(own.IgnoredTags, []string{"service.beta.kubernetes.io/aws-load-balancer-type: nlb"}) {
			t.Errorf("ignoredTags = %v", own.IgnoredTags)
		}
		for agent, want := range map[string][]service.ReasonCode{
			"hub":     {reasonNoTags, reasonHub},
			"plant-a": {service.ReasonNoPrefix, service.ReasonMatched},
			"plant-b": {service.ReasonAll},
			"plant-c": {service.ReasonNoPrefix},
			"plant-d": {service.ReasonAll, reasonRouterModeNone},
			"plant-e": {service.ReasonNoSpace},
			"plant-f": {service.ReasonTokenColon},
		} {
			if got := own.codes(agent); !slices.Equal(got, want) {
				t.Errorf("preview reasons of %s = %v, want %v", agent, got, want)
			}
		}
		if none := preview("?tags="); len(none.Tags) != 0 || !slices.Equal(none.would(), []string{"hub", "plant-b"}) {
			t.Errorf("preview with no tags: tags %v would listen %v, want hub and plant-b (all)", none.Tags, none.would())
		}
		other := preview("?tags=payments,a:b&tags=x=y")
		if !slices.Equal(other.Tags, []string{"payments", "a:b", "x=y"}) || !slices.Equal(other.IgnoredTags, []string{"a:b", "x=y"}) {
			t.Errorf("preview tags %v ignored %v", other.Tags, other.IgnoredTags)
		}
		if got := other.codes("plant-a"); !slices.Equal(got, []service.ReasonCode{service.ReasonNoPrefix, service.ReasonNotOnService}) {
			t.Errorf("plant-a reasons for payments = %v", got)
		}
		if !slices.Equal(other.would(), []string{"hub", "plant-b"}) {
			t.Errorf("preview for payments: would listen %v", other.would())
		}
		api.JSON(http.MethodGet, "/api/v3/services/nope/distribution", nil).WantError(http.StatusNotFound, "NotFoundError", "Service with name nope not found")
		_ = hub
	})
}

// TestDistributionPrefix: the views follow the configured prefix.
func TestDistributionPrefix(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) { o.Tags = service.TagRule{Prefix: "example.com/listen"} })
	createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true})
	createAgent(t, api, map[string]any{"name": "old", "tags": []string{service.DefaultTagPrefix + ": checkout"}})
	createAgent(t, api, map[string]any{"name": "new", "tags": []string{"example.com/listen: checkout"}})
	api.JSON(http.MethodPost, "/api/v3/services", map[string]any{"name": "checkout", "type": "external",
		"resource": "203.0.113.10", "targetPort": 443, "tags": []string{"checkout"}}).Want(http.StatusCreated)
	var out struct {
		Distribution []distJSON `json:"distribution"`
	}
	api.JSON(http.MethodGet, "/api/v3/services/checkout", nil).Want(http.StatusOK).Decode(&out)
	var names []string
	for _, d := range out.Distribution {
		names = append(names, d.AgentName)
	}
	if !slices.Equal(names, []string{"hub", "new"}) {
		t.Fatalf("distribution with prefix example.com/listen: %v, want hub and new", names)
	}
}
