package api

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"svcbridge/auth"
	"svcbridge/document"
	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

// createdAgent is the answer of an agent create.
type createdAgent struct {
	inventory.Agent
	Token string `json:"token"`
}

func createAgent(t testing.TB, a *testAPI, body any) createdAgent {
	t.Helper()
	var out createdAgent
	a.JSON(http.MethodPost, "/api/v3/agents", body).Want(http.StatusCreated).Decode(&out)
	return out
}

func createMicroservice(t *testing.T, a *testAPI, body any) inventory.Microservice {
	t.Helper()
	var out inventory.Microservice
	a.JSON(http.MethodPost, "/api/v3/microservices", body).Want(http.StatusCreated).Decode(&out)
	return out
}

// insertService stores a Service row directly (the Services API is tested
// elsewhere); the inventory only needs it to exist.
func insertService(t *testing.T, st *store.Store, name, typ, resource string) {
	t.Helper()
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		port, err := tx.AllocateBridgePort(context.Background(), store.PortRange{First: 10024, Last: 65535})
		if err != nil {
			return err
		}
		return tx.InsertService(context.Background(), &service.Service{
			Spec: service.Spec{Name: name, Type: typ, Resource: resource, TargetPort: 8080,
				DefaultBridge: "default-router", Tags: []string{}},
			BridgePort: port,
			// What service.Place says of a default-router service.
			Placement: service.Placement{OnDefaultRouter: true},
		})
	})
	if err != nil {
		t.Fatalf("insert service %s: %v", name, err)
	}
}

// snapshot is everything the inventory endpoints can write, to prove that
// a refused request wrote nothing.
func snapshot(t *testing.T, st *store.Store) string {
	t.Helper()
	var out struct {
		Agents        []inventory.Agent
		Microservices []inventory.Microservice
		Services      []service.Service
		Routers       map[string]string
		Changes       map[string]store.Changes
	}
	ctx := context.Background()
	err := st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if out.Agents, err = tx.ListAgents(ctx); err != nil {
			return err
		}
		if out.Microservices, err = tx.ListMicroservices(ctx); err != nil {
			return err
		}
		if out.Services, err = tx.ListServices(ctx); err != nil {
			return err
		}
		out.Routers, out.Changes = map[string]string{}, map[string]store.Changes{}
		for _, a := range out.Agents {
			cfg, err := tx.RouterConfig(ctx, a.UUID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			out.Routers[a.UUID] = string(cfg)
			if out.Changes[a.UUID], err = tx.AgentChanges(ctx, a.UUID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func writeRouterConfig(t *testing.T, st *store.Store, agentUUID, cfg string) {
	t.Helper()
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		return tx.WriteRouter(context.Background(), agentUUID, store.RouterWrite{Base: []byte(cfg)})
	})
	if err != nil {
		t.Fatalf("write router config: %v", err)
	}
}

func TestAgentCRUD(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, rec := newTestAPI(t, dialect)

		hub := createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		if !inventory.IsUUID(hub.UUID) || hub.RouterMode != "interior" || !hub.DefaultRouter || hub.Host != "hub.example.com" {
			t.Fatalf("hub = %+v", hub)
		}
		if b, err := hex.DecodeString(hub.Token); err != nil || len(b) != 32 {
			t.Fatalf("token %q is not 32 hex-encoded bytes", hub.Token)
		}
		// Defaults: edge, no tags, no upstreams; upstreams by name or uuid
		// come back as uuids; tags verbatim.
		given := "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01"
		tags := []string{"service.iofog.org/tag: checkout", "  Odd Tag = x  "}
		edge := createAgent(t, api, map[string]any{"uuid": given, "name": "plant-a", "host": "10.0.0.5",
			"tags": tags, "upstreamRouters": []string{"hub"}, "createdAt": "ignored"})
		if edge.UUID != given || edge.RouterMode != "edge" || edge.DefaultRouter ||
			!slices.Equal(edge.Tags, tags) || !slices.Equal(edge.UpstreamRouters, []string{hub.UUID}) {
			t.Fatalf("plant-a = %+v", edge)
		}
		bare := createAgent(t, api, map[string]any{"name": "b-sensor", "routerMode": "none", "upstreamRouters": []string{}})
		if bare.Tags == nil || len(bare.Tags) != 0 || len(bare.UpstreamRouters) != 0 || bare.Host != "" {
			t.Fatalf("b-sensor = %+v", bare)
		}
		if hub.Token == edge.Token || edge.Token == bare.Token {
			t.Fatal("two agents got the same token")
		}

		// GET by name and by uuid; the token is never shown again.
		for _, ref := range []string{"plant-a", edge.UUID} {
			r := api.Do(http.MethodGet, "/api/v3/agents/"+ref, nil).Want(http.StatusOK)
			if _, ok := r.Map()["token"]; ok {
				t.Fatalf("GET %s shows the token: %s", ref, r.Body)
			}
			var got inventory.Agent
			r.Decode(&got)
			if got.UUID != edge.UUID || !time.Time(got.CreatedAt).Equal(edge.CreatedAt) || !slices.Equal(got.Tags, tags) {
				t.Fatalf("GET %s = %+v, created %+v", ref, got, edge.Agent)
			}
		}
		var list []inventory.Agent
		api.Do(http.MethodGet, "/api/v3/agents", nil).Want(http.StatusOK).Decode(&list)
		var names []string
		for _, a := range list {
			names = append(names, a.Name)
		}
		if !slices.Equal(names, []string{"b-sensor", "hub", "plant-a"}) {
			t.Fatalf("list names = %v, want sorted by name", names)
		}

		// Router documents: no bridges and the router's site for routers,
		// 404 for none.
		for _, ref := range []string{"hub", edge.UUID} {
			r := api.Do(http.MethodGet, "/api/v3/agents/"+ref+"/router", nil).Want(http.StatusOK)
			var doc struct {
				Bridges  json.RawMessage `json:"bridges"`
				Metadata struct {
					ID string `json:"id"`
				} `json:"metadata"`
			}
			if json.Unmarshal(r.Body, &doc) != nil || string(doc.Bridges) != `{"tcpConnectors":{},"tcpListeners":{}}` || doc.Metadata.ID == "" {
				t.Fatalf("router of %s = %s, want no bridges and a site", ref, r.Body)
			}
		}
		api.Do(http.MethodGet, "/api/v3/agents/b-sensor/router", nil).
			WantError(http.StatusNotFound, "NotFoundError", "Agent b-sensor has no router (routerMode none)")
		api.Do(http.MethodGet, "/api/v3/agents/nope/router", nil).
			WantError(http.StatusNotFound, "NotFoundError", "Agent nope not found")

		// A partial PATCH changes the tags only; an unchanged uuid and
		// fields GET answers are ignored.
		var patched inventory.Agent
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-a", map[string]any{"tags": []string{"x"}, "uuid": edge.UUID, "updatedAt": "x"}).
			Want(http.StatusOK).Decode(&patched)
		if !slices.Equal(patched.Tags, []string{"x"}) || patched.Host != "10.0.0.5" || patched.RouterMode != "edge" ||
			!slices.Equal(patched.UpstreamRouters, []string{hub.UUID}) || patched.Name != "plant-a" {
			t.Fatalf("after tags PATCH: %+v", patched)
		}
		// Rename by uuid, then switch the router off: its config goes.
		api.JSON(http.MethodPatch, "/api/v3/agents/"+edge.UUID, `{"name":"plant-b","host":"10.0.0.6"}`).Want(http.StatusOK).Decode(&patched)
		if patched.Name != "plant-b" || patched.Host != "10.0.0.6" || !slices.Equal(patched.Tags, []string{"x"}) {
			t.Fatalf("after rename: %+v", patched)
		}
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-b", `{"routerMode":"none","upstreamRouters":[]}`).Want(http.StatusOK).Decode(&patched)
		if patched.RouterMode != "none" || len(patched.UpstreamRouters) != 0 {
			t.Fatalf("after routerMode none: %+v", patched)
		}
		api.Do(http.MethodGet, "/api/v3/agents/plant-b/router", nil).
			WantError(http.StatusNotFound, "NotFoundError", "Agent plant-b has no router (routerMode none)")
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-b", `{"routerMode":"edge"}`).Want(http.StatusOK)
		// A new router: no bridges; with no upstream routers, an uplink
		// to the default router.
		r := api.Do(http.MethodGet, "/api/v3/agents/plant-b/router", nil).Want(http.StatusOK)
		var again struct {
			Bridges    json.RawMessage `json:"bridges"`
			Connectors map[string]struct {
				Host string `json:"host"`
				Role string `json:"role"`
			} `json:"connectors"`
		}
		if json.Unmarshal(r.Body, &again) != nil || string(again.Bridges) != `{"tcpConnectors":{},"tcpListeners":{}}` ||
			len(again.Connectors) != 1 || again.Connectors[hub.UUID].Host != "hub.example.com" || again.Connectors[hub.UUID].Role != "edge" {
			t.Fatalf("router after edge again = %s", r.Body)
		}

		// Deleting a used upstream router is refused; once unused it goes.
		api.Do(http.MethodDelete, "/api/v3/agents/b-sensor", nil).Want(http.StatusNoContent)
		api.Do(http.MethodGet, "/api/v3/agents/b-sensor", nil).WantError(http.StatusNotFound, "NotFoundError", "Agent b-sensor not found")
		api.Do(http.MethodDelete, "/api/v3/agents/b-sensor", nil).WantError(http.StatusNotFound, "NotFoundError", "Agent b-sensor not found")

		// Every create, update and delete asked for the agent's reconcile.
		want := [][]string{{hub.UUID}, {edge.UUID}, {bare.UUID}, {edge.UUID}, {edge.UUID}, {edge.UUID}, {edge.UUID}, {bare.UUID}}
		if got := rec.AgentCalls(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("AgentsQueued calls = %v\nwant %v", got, want)
		}
		if len(rec.Services()) != 0 {
			t.Fatalf("ServiceChanged calls = %v", rec.Services())
		}

		// A failed trigger does not fail the committed request, and the
		// router's reconcile was queued with the change: a crash before
		// the trigger loses nothing.
		if err := st.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.ClaimQueuedAgents(context.Background(), 100, time.Hour)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rec.FailWith(errors.New("temporal down"))
		api.JSON(http.MethodPatch, "/api/v3/agents/hub", `{"tags":["t"]}`).Want(http.StatusOK)
		if q, err := st.QueueOutlook(context.Background(), 100); err != nil || q.Claimable != 1 {
			t.Fatalf("agents queued for a reconcile after a failed trigger: %+v %v, want the hub", q, err)
		}
	})
}

func TestAgentYAML(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, rec := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true})
		rec.Reset()

		// kind: Agent, as seed 000 shows it: a new name creates.
		doc := `apiVersion: datasance.com/v3  # or iofog.org/v3 according to the flavor
kind: Agent
metadata:
    name: test-1
    tags:
        - "service.iofog.org/tag: checkout" # service distribution tag
        - genertic-agent-tag
spec:
    host: 192.168.1.20
    routerMode: edge
    upstreamRouters:
        - hub
`
		var created createdAgent
		api.Upload(http.MethodPost, "/api/v3/agents/yaml", "agent", doc).Want(http.StatusCreated).Decode(&created)
		if created.Name != "test-1" || created.Host != "192.168.1.20" || created.RouterMode != "edge" || created.Token == "" ||
			!slices.Equal(created.Tags, []string{"service.iofog.org/tag: checkout", "genertic-agent-tag"}) ||
			!slices.Equal(created.UpstreamRouters, []string{hub.UUID}) {
			t.Fatalf("created = %+v", created)
		}

		// kind: AgentConfig on the same name replaces the whole agent:
		// host and upstreams absent → cleared.
		doc = `apiVersion: iofog.org/v3
kind: AgentConfig
metadata:
  name: test-1
  tags:
    - "service.iofog.org/tag: all"
spec:
  routerMode: interior
`
		var updated inventory.Agent
		r := api.Upload(http.MethodPost, "/api/v3/agents/yaml", "agent", doc).Want(http.StatusOK)
		if _, ok := r.Map()["token"]; ok {
			t.Fatalf("an update shows a token: %s", r.Body)
		}
		r.Decode(&updated)
		if updated.UUID != created.UUID || updated.Host != "" || updated.RouterMode != "interior" ||
			!slices.Equal(updated.Tags, []string{"service.iofog.org/tag: all"}) || len(updated.UpstreamRouters) != 0 {
			t.Fatalf("updated = %+v", updated)
		}
		// No metadata.tags, no spec: no tags, an edge router.
		api.Upload(http.MethodPost, "/api/v3/agents/yaml", "agent", "kind: Agent\nmetadata:\n  name: test-1\n").
			Want(http.StatusOK).Decode(&updated)
		if updated.Tags == nil || len(updated.Tags) != 0 || updated.RouterMode != "edge" {
			t.Fatalf("after bare document: %+v", updated)
		}
		// The credential survived the updates.
		api.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(created.Token)...).Want(http.StatusOK)

		want := []string{created.UUID, created.UUID, created.UUID}
		if got := rec.Agents(); !slices.Equal(got, want) {
			t.Fatalf("AgentsQueued = %v, want %v", got, want)
		}
	})
}

// TestInventoryBadInput sends each kind of bad input and checks the exact
// status and envelope, that nothing changed, and that nothing was
// reconciled.
func TestInventoryBadInput(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, rec := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true})
		createAgent(t, api, map[string]any{"name": "core", "routerMode": "interior"})
		plant := createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub", "core"}})
		sensor := createAgent(t, api, map[string]any{"name": "sensor", "routerMode": "none"})
		cart := createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "plant-a"})
		createMicroservice(t, api, map[string]any{"application": "shop", "name": "till", "agent": "sensor"})
		insertService(t, st, "cart", service.TypeMicroservice, cart.UUID)

		const (
			post, patch, del, get = http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodGet
			validation            = "ValidationError"
			duplicate             = "DuplicatePropertyError"
			inUse                 = "ConflictError"
			missing               = "NotFoundError"
			authentication        = "AuthenticationError"
		)
		jsonReq := func(method, path, body string) func() *testResponse {
			return func() *testResponse { return api.JSON(method, path, body) }
		}
		yamlReq := func(doc string) func() *testResponse {
			return func() *testResponse { return api.Upload(post, "/api/v3/agents/yaml", "agent", doc) }
		}
		aliasBomb := "kind: Agent\nmetadata:\n  name: bomb\n  a: &a [x, x]\n"
		for i := 0; i <= service.MaxYAMLAliases; i++ {
			aliasBomb += fmt.Sprintf("  b%d: *a\n", i)
		}
		cases := []struct {
			name    string
			do      func() *testResponse
			status  int
			errName string
			message string
		}{
			// Agents, JSON.
			{"duplicate name", jsonReq(post, "/api/v3/agents", `{"name":"plant-a"}`),
				409, duplicate, "Agent with name plant-a already exists"},
			{"bad routerMode", jsonReq(post, "/api/v3/agents", `{"name":"x","routerMode":"hub"}`),
				400, validation, "Field routerMode is not one of enum values: edge,interior,none"},
			{"missing name", jsonReq(post, "/api/v3/agents", `{"host":"h"}`),
				400, validation, "Required field 'name' is missing"},
			{"bad name", jsonReq(post, "/api/v3/agents", `{"name":"Plant_A"}`),
				400, validation, `Invalid format for field 'name': "Plant_A" must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`},
			{"name that is a uuid", jsonReq(post, "/api/v3/agents", `{"name":"`+plant.UUID+`"}`),
				400, validation, `Invalid format for field 'name': "` + plant.UUID + `" looks like a uuid, which would make references to agents ambiguous`},
			{"bad uuid", jsonReq(post, "/api/v3/agents", `{"name":"x","uuid":"not-a-uuid"}`),
				400, validation, `Invalid format for field 'uuid': "not-a-uuid" is not a uuid`},
			{"duplicate uuid", jsonReq(post, "/api/v3/agents", `{"name":"x","uuid":"`+plant.UUID+`"}`),
				409, duplicate, "Agent with uuid " + plant.UUID + " already exists"},
			{"second default router", jsonReq(post, "/api/v3/agents", `{"name":"x","routerMode":"interior","defaultRouter":true}`),
				409, duplicate, "Agent hub is already the default router; only one agent can be the default router"},
			{"second default router by PATCH", jsonReq(patch, "/api/v3/agents/core", `{"defaultRouter":true}`),
				409, duplicate, "Agent hub is already the default router; only one agent can be the default router"},
			{"default router on edge", jsonReq(post, "/api/v3/agents", `{"name":"x","defaultRouter":true}`),
				400, validation, "Agent x cannot be the default router: the default router must have routerMode interior"},
			{"unknown upstream", jsonReq(post, "/api/v3/agents", `{"name":"x","upstreamRouters":["hub","nope"]}`),
				400, validation, "Invalid upstream router 'nope': no such agent"},
			{"edge upstream", jsonReq(post, "/api/v3/agents", `{"name":"x","upstreamRouters":["`+plant.UUID+`"]}`),
				400, validation, "Invalid upstream router '" + plant.UUID + "': agent plant-a has routerMode edge, and only interior routers accept connections"},
			{"own upstream", jsonReq(patch, "/api/v3/agents/core", `{"upstreamRouters":["core"]}`),
				400, validation, "Agent core cannot be its own upstream router"},
			{"own upstream by old name", jsonReq(patch, "/api/v3/agents/core", `{"name":"core-2","upstreamRouters":["core"]}`),
				400, validation, "Agent core-2 cannot be its own upstream router"},
			{"upstream twice", jsonReq(post, "/api/v3/agents", `{"name":"x","upstreamRouters":["hub","`+hub.UUID+`"]}`),
				400, validation, "Upstream router '" + hub.UUID + "' is listed twice"},
			{"upstreams without router", jsonReq(post, "/api/v3/agents", `{"name":"x","routerMode":"none","upstreamRouters":["hub"]}`),
				400, validation, "Agent x has routerMode none and so cannot have upstreamRouters"},
			{"tags not strings", jsonReq(post, "/api/v3/agents", `{"name":"x","tags":["a",1]}`),
				400, validation, "Field 'tags' is not of a type(s) array of strings"},
			{"null tags", jsonReq(patch, "/api/v3/agents/plant-a", `{"tags":null}`),
				400, validation, "Field 'tags' is not of a type(s) array of strings"},
			{"defaultRouter not bool", jsonReq(post, "/api/v3/agents", `{"name":"x","defaultRouter":"yes"}`),
				400, validation, "Field 'defaultRouter' is not of a type(s) boolean"},
			{"malformed JSON", jsonReq(post, "/api/v3/agents", `{"name":`),
				400, validation, "Invalid JSON: unexpected EOF"},
			{"trailing JSON", jsonReq(post, "/api/v3/agents", `{"name":"x"} {}`),
				400, validation, "Invalid JSON: unexpected data after the top-level value"},
			{"JSON array", jsonReq(post, "/api/v3/agents", `[{"name":"x"}]`),
				400, validation, "Field 'instance' is not of a type(s) object"},
			{"empty body", jsonReq(post, "/api/v3/agents", ``),
				400, validation, "Invalid JSON: empty body"},
			{"not JSON content type", func() *testResponse {
				return api.Do(post, "/api/v3/agents", strings.NewReader(`{"name":"x"}`), "Content-Type", "text/plain")
			}, 400, validation, "Content-Type must be application/json"},
			{"rename onto another", jsonReq(patch, "/api/v3/agents/core", `{"name":"plant-a"}`),
				409, duplicate, "Agent with name plant-a already exists"},
			{"change uuid", jsonReq(patch, "/api/v3/agents/core", `{"uuid":"0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01"}`),
				400, validation, "Field 'uuid' cannot be changed"},
			{"demote a used upstream", jsonReq(patch, "/api/v3/agents/core", `{"routerMode":"edge"}`),
				409, inUse, "Agent core must keep routerMode interior: agents plant-a use it as upstream router"},
			{"PATCH unknown agent", jsonReq(patch, "/api/v3/agents/nope", `{"tags":[]}`),
				404, missing, "Agent nope not found"},
			{"delete a used agent", jsonReq(del, "/api/v3/agents/plant-a", ""),
				409, inUse, "Agent plant-a cannot be deleted: it runs microservices shop/cart"},
			{"delete the hub", jsonReq(del, "/api/v3/agents/hub", ""),
				409, inUse, "Agent hub cannot be deleted: agents plant-a use it as upstream router; it is the default router of 1 services"},
			{"rotate unknown token", jsonReq(post, "/api/v3/agents/nope/token", ""),
				404, missing, "Agent nope not found"},

			// Agents, YAML.
			{"YAML wrong multipart field", func() *testResponse {
				return api.Upload(post, "/api/v3/agents/yaml", "service", "kind: Agent\nmetadata:\n  name: x\n")
			}, 400, validation, "Missing file in multipart field 'agent'"},
			{"YAML not multipart", func() *testResponse {
				return api.Do(post, "/api/v3/agents/yaml", strings.NewReader("kind: Agent"), "Content-Type", "application/yaml")
			}, 400, validation, "Content-Type must be multipart/form-data with the document in field 'agent'"},
			{"YAML malformed", yamlReq("kind: Agent\nmetadata: [\n"),
				400, validation, "Error parsing YAML: line 2: did not find expected node content"},
			{"YAML wrong kind", yamlReq("kind: Service\nmetadata:\n  name: x\n"),
				400, validation, "Invalid kind Service"},
			{"YAML no kind", yamlReq("metadata:\n  name: x\n"),
				400, validation, "Invalid YAML format: missing kind field"},
			{"YAML empty", yamlReq(""),
				400, validation, "Invalid YAML format: missing kind field"},
			{"YAML two documents", yamlReq("kind: Agent\nmetadata:\n  name: x\n---\nkind: Agent\nmetadata:\n  name: y\n"),
				400, validation, "Error parsing YAML: expected a single document in the stream, but found more"},
			{"YAML no name", yamlReq("kind: Agent\nmetadata:\n  tags: [a]\n"),
				400, validation, "Required field 'name' is missing"},
			{"YAML no metadata", yamlReq("kind: Agent\nspec:\n  routerMode: edge\n"),
				400, validation, "Invalid YAML format: missing metadata"},
			{"YAML spec placeholder", yamlReq("kind: Agent\nmetadata:\n  name: x\nspec:\n    ...\n"),
				400, validation, "Invalid YAML format: spec must be a mapping"},
			{"YAML bad routerMode", yamlReq("kind: AgentConfig\nmetadata:\n  name: x\nspec:\n  routerMode: router\n"),
				400, validation, "Field routerMode is not one of enum values: edge,interior,none"},
			{"YAML tags not a list", yamlReq("kind: Agent\nmetadata:\n  name: x\n  tags: a\n"),
				400, validation, "Field 'tags' is not of a type(s) array"},
			{"YAML defaultRouter not bool", yamlReq("kind: Agent\nmetadata:\n  name: x\nspec:\n  defaultRouter: \"true\"\n"),
				400, validation, "Field 'defaultRouter' is not of a type(s) boolean"},
			{"YAML duplicated key", yamlReq("kind: Agent\nmetadata:\n  name: x\n  name: y\n"),
				400, validation, "Error parsing YAML: line 4: duplicated mapping key 'name'"},
			{"YAML merge key", yamlReq("kind: Agent\nspec: &b\n  host: x\nmetadata:\n  <<: *b\n"),
				400, validation, "Error parsing YAML: line 5: merge keys ('<<') are not supported"},
			{"YAML alias bomb", yamlReq(aliasBomb),
				400, validation, fmt.Sprintf("Error parsing YAML: more than %d aliases", service.MaxYAMLAliases)},
			{"YAML of too many values", yamlReq("kind: Agent\nmetadata:\n  name: x\nspec:\n  tags:\n" + strings.Repeat("  - a\n", document.MaxYAMLValues)),
				400, validation, "Error parsing YAML: more than 512 keys and items"},
			{"YAML second default router", yamlReq("kind: AgentConfig\nmetadata:\n  name: core\nspec:\n  routerMode: interior\n  defaultRouter: true\n"),
				409, duplicate, "Agent hub is already the default router; only one agent can be the default router"},
			{"YAML replace drops a used interior", yamlReq("kind: AgentConfig\nmetadata:\n  name: core\n"),
				409, inUse, "Agent core must keep routerMode interior: agents plant-a use it as upstream router"},

			// Microservices.
			{"unknown agent", jsonReq(post, "/api/v3/microservices", `{"application":"shop","name":"x","agent":"nope"}`),
				400, validation, "Invalid agent 'nope'"},
			{"no agent", jsonReq(post, "/api/v3/microservices", `{"application":"shop","name":"x"}`),
				400, validation, "Required field 'agent' is missing"},
			{"duplicate microservice", jsonReq(post, "/api/v3/microservices", `{"application":"shop","name":"cart","agent":"hub"}`),
				409, duplicate, "Microservice with name cart already exists in application shop"},
			{"duplicate microservice uuid", jsonReq(post, "/api/v3/microservices", `{"uuid":"`+cart.UUID+`","application":"shop","name":"x","agent":"hub"}`),
				409, duplicate, "Microservice with uuid " + cart.UUID + " already exists"},
			{"bad microservice uuid", jsonReq(post, "/api/v3/microservices", `{"uuid":"a b","application":"shop","name":"x","agent":"hub"}`),
				400, validation, "Invalid format for field 'uuid': letters, digits and '-' only, at most 64 characters"},
			{"bad application", jsonReq(post, "/api/v3/microservices", `{"application":"Shop","name":"x","agent":"hub"}`),
				400, validation, `Invalid format for field 'application': "Shop" must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`},
			{"hostNetworkMode not bool", jsonReq(post, "/api/v3/microservices", `{"application":"shop","name":"x","agent":"hub","hostNetworkMode":1}`),
				400, validation, "Field 'hostNetworkMode' is not of a type(s) boolean"},
			{"move to unknown agent", jsonReq(patch, "/api/v3/microservices/"+cart.UUID, `{"agent":"nope"}`),
				400, validation, "Invalid agent 'nope'"},
			{"rename onto another microservice", jsonReq(patch, "/api/v3/microservices/"+cart.UUID, `{"name":"till"}`),
				409, duplicate, "Microservice with name till already exists in application shop"},
			{"change microservice uuid", jsonReq(patch, "/api/v3/microservices/"+cart.UUID, `{"uuid":"other"}`),
				400, validation, "Field 'uuid' cannot be changed"},
			{"unknown microservice", jsonReq(get, "/api/v3/microservices/nope", ""),
				404, missing, "Microservice nope not found"},
			{"delete a used microservice", jsonReq(del, "/api/v3/microservices/"+cart.UUID, ""),
				409, inUse, "Microservice shop/cart cannot be deleted: services cart use it"},

			// Agent pull API.
			{"no credential", jsonReq(get, "/api/v3/agent/config/changes", ""),
				401, authentication, "Missing agent credential: send 'Authorization: Bearer <agent token>'"},
			{"basic auth", func() *testResponse {
				return api.Do(get, "/api/v3/agent/router", nil, "Authorization", "Basic "+plant.Token)
			}, 401, authentication, "Missing agent credential: send 'Authorization: Bearer <agent token>'"},
			{"unknown token", func() *testResponse {
				return api.Do(get, "/api/v3/agent/router", nil, bearer(strings.Repeat("0", 64))...)
			}, 401, authentication, "Invalid agent token"},
			{"bare hash as token", func() *testResponse {
				return api.Do(get, "/api/v3/agent/router", nil, bearer(auth.HashAgentToken(plant.Token))...)
			}, 401, authentication, "Invalid agent token"},
			{"ack without lastUpdated", func() *testResponse {
				return api.JSON(patch, "/api/v3/agent/config/changes", `{}`, bearer(plant.Token)...)
			}, 400, validation, "Required field 'lastUpdated' is missing"},
			{"ack unknown field", func() *testResponse {
				return api.JSON(patch, "/api/v3/agent/config/changes", `{"lastUpdated":1,"lastUpdate":2}`, bearer(plant.Token)...)
			}, 400, validation, "Unknown field 'lastUpdate'"},
			{"ack not integer", func() *testResponse {
				return api.JSON(patch, "/api/v3/agent/config/changes", `{"lastUpdated":"soon"}`, bearer(plant.Token)...)
			}, 400, validation, "Field 'lastUpdated' is not of a type(s) integer"},
			{"router of agent without router", func() *testResponse {
				return api.Do(get, "/api/v3/agent/router", nil, bearer(sensor.Token)...)
			}, 404, missing, "Agent sensor has no router (routerMode none)"},

			{"unknown route", jsonReq(get, "/api/v3/agentz", ""),
				404, missing, "Route GET /api/v3/agentz not found"},
		}
		rec.Reset()
		before := snapshot(t, st)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := tc.do()
				r.t = t
				r.WantError(tc.status, tc.errName, tc.message)
				if after := snapshot(t, st); after != before {
					t.Fatalf("the refused request changed the store:\nbefore %s\nafter  %s", before, after)
				}
				if n := rec.Calls(); n != 0 {
					t.Fatalf("the refused request triggered %d reconciles", n)
				}
			})
		}
		// Tokens are not in the snapshot: the fixture's still works.
		api.Do(get, "/api/v3/agent/router", nil, bearer(plant.Token)...).Want(http.StatusOK)
	})
}

func TestMicroserviceCRUD(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, rec := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true})
		a := createAgent(t, api, map[string]any{"name": "plant-a"})
		b := createAgent(t, api, map[string]any{"name": "plant-b"})

		cart := createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "plant-a", "createdAt": "ignored"})
		if !inventory.IsUUID(cart.UUID) || cart.AgentUUID != a.UUID || cart.HostNetworkMode {
			t.Fatalf("cart = %+v", cart)
		}
		given := createMicroservice(t, api, map[string]any{"uuid": "ms-0001", "application": "billing", "name": "cart", "agent": b.UUID, "hostNetworkMode": true})
		if given.UUID != "ms-0001" || given.AgentUUID != b.UUID || !given.HostNetworkMode {
			t.Fatalf("given = %+v", given)
		}
		createMicroservice(t, api, map[string]any{"application": "shop", "name": "basket", "agent": "plant-a"})

		var list struct{ Microservices []inventory.Microservice }
		api.Do(http.MethodGet, "/api/v3/microservices", nil).Want(http.StatusOK).Decode(&list)
		var names []string
		for _, m := range list.Microservices {
			names = append(names, m.Application+"/"+m.Name)
		}
		if !slices.Equal(names, []string{"billing/cart", "shop/basket", "shop/cart"}) {
			t.Fatalf("list = %v, want by application then name", names)
		}
		var got inventory.Microservice
		api.Do(http.MethodGet, "/api/v3/microservices/"+cart.UUID, nil).Want(http.StatusOK).Decode(&got)
		if got.UUID != cart.UUID || !time.Time(got.CreatedAt).Equal(cart.CreatedAt) || got.AgentUUID != a.UUID {
			t.Fatalf("GET = %+v, created %+v", got, cart)
		}
		if n := rec.Calls(); n != 3 { // the three agent creates only
			t.Fatalf("%d reconciles, want 3 (agent creates)", n)
		}

		insertService(t, st, "checkout", service.TypeMicroservice, cart.UUID)
		insertService(t, st, "checkout-2", service.TypeMicroservice, cart.UUID)
		rec.Reset()

		// Partial PATCH: host network only; the services and the agent
		// are reconciled.
		api.JSON(http.MethodPatch, "/api/v3/microservices/"+cart.UUID, `{"hostNetworkMode":true}`).Want(http.StatusOK).Decode(&got)
		if !got.HostNetworkMode || got.Name != "cart" || got.Application != "shop" || got.AgentUUID != a.UUID {
			t.Fatalf("after PATCH = %+v", got)
		}
		if s := rec.Services(); !slices.Equal(s, []string{"checkout", "checkout-2"}) {
			t.Fatalf("ServiceChanged = %v", s)
		}
		if ag := rec.AgentCalls(); !slices.EqualFunc(ag, [][]string{{a.UUID}}, slices.Equal) {
			t.Fatalf("AgentsQueued = %v", ag)
		}
		// The services' reconciles were requested with the change, so
		// they happen even when the signals are lost.
		var svc wire.Service
		api.Do(http.MethodGet, "/api/v3/services/checkout", nil).Want(http.StatusOK).Decode(&svc)
		if svc.ReconcileRequest != 1 || svc.ObservedReconcileRequest != 0 {
			t.Fatalf("checkout's reconcile requests %d, observed %d, want 1, 0", svc.ReconcileRequest, svc.ObservedReconcileRequest)
		}
		// Moving it reconciles both agents.
		rec.Reset()
		api.JSON(http.MethodPatch, "/api/v3/microservices/"+cart.UUID, `{"agent":"plant-b"}`).Want(http.StatusOK).Decode(&got)
		if got.AgentUUID != b.UUID || !got.HostNetworkMode {
			t.Fatalf("after move = %+v", got)
		}
		if ag := rec.AgentCalls(); !slices.EqualFunc(ag, [][]string{{a.UUID, b.UUID}}, slices.Equal) {
			t.Fatalf("AgentsQueued = %v", ag)
		}
		if s := rec.Services(); !slices.Equal(s, []string{"checkout", "checkout-2"}) {
			t.Fatalf("ServiceChanged = %v", s)
		}
		// Nothing that places connectors changed: no reconcile.
		rec.Reset()
		api.JSON(http.MethodPatch, "/api/v3/microservices/"+cart.UUID, `{"agent":"`+b.UUID+`","hostNetworkMode":true}`).Want(http.StatusOK)
		if n := rec.Calls(); n != 0 {
			t.Fatalf("a no-op PATCH triggered %d reconciles", n)
		}

		// An unused microservice can go.
		api.Do(http.MethodDelete, "/api/v3/microservices/ms-0001", nil).Want(http.StatusNoContent)
		api.Do(http.MethodGet, "/api/v3/microservices/ms-0001", nil).WantError(http.StatusNotFound, "NotFoundError", "Microservice ms-0001 not found")
	})
}

// TestAgentToken covers the credential: shown once, scoped to its agent,
// revoked by rotation.
func TestAgentToken(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		a := createAgent(t, api, map[string]any{"name": "plant-a"})
		b := createAgent(t, api, map[string]any{"name": "plant-b", "routerMode": "interior"})

		cfgA := `{"bridges":{"tcpConnectors":{},"tcpListeners":{"a-listener":{"name":"a-listener","port":"10024","address":"a"}}},"site":{"id":"a"}}`
		cfgB := `{"bridges":{"tcpConnectors":{"b-connector":{"name":"b-connector","host":"127.0.0.1","port":"80","address":"b"}},"tcpListeners":{}}}`
		writeRouterConfig(t, st, a.UUID, cfgA)
		writeRouterConfig(t, st, b.UUID, cfgB)

		for _, c := range []struct {
			token, cfg string
		}{{a.Token, cfgA}, {b.Token, cfgB}} {
			r := api.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(c.token)...).Want(http.StatusOK)
			if string(r.Body) != c.cfg {
				t.Fatalf("router = %s, want (as stored) %s", r.Body, c.cfg)
			}
		}
		// Flags are per agent: acknowledging A's leaves B's up.
		var ch store.Changes
		api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(a.Token)...).Want(http.StatusOK).Decode(&ch)
		api.JSON(http.MethodPatch, "/api/v3/agent/config/changes", map[string]any{"lastUpdated": ch.LastUpdated}, bearer(a.Token)...).
			Want(http.StatusNoContent)
		api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(a.Token)...).Decode(&ch)
		if ch.MicroserviceConfig {
			t.Fatalf("A's flag still up after its acknowledgement: %+v", ch)
		}
		api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(b.Token)...).Decode(&ch)
		if !ch.MicroserviceConfig {
			t.Fatalf("B's flag cleared by A's acknowledgement: %+v", ch)
		}

		// Rotation: the new token works, the old one stops, B's is untouched.
		r := api.Do(http.MethodPost, "/api/v3/agents/plant-a/token", nil).Want(http.StatusOK).Map()
		next, _ := r["token"].(string)
		if r["uuid"] != a.UUID || len(next) != 64 || next == a.Token {
			t.Fatalf("rotation answered %v", r)
		}
		api.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(a.Token)...).
			WantError(http.StatusUnauthorized, "AuthenticationError", "Invalid agent token")
		if got := api.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(next)...).Want(http.StatusOK); string(got.Body) != cfgA {
			t.Fatalf("router with the new token = %s", got.Body)
		}
		api.Do(http.MethodGet, "/api/v3/agent/router", nil, bearer(b.Token)...).Want(http.StatusOK)
		// The scheme is case-insensitive (RFC 9110).
		api.Do(http.MethodGet, "/api/v3/agent/router", nil, "Authorization", "bearer "+next).Want(http.StatusOK)

		// Deleting an agent revokes its token too.
		api.Do(http.MethodDelete, "/api/v3/agents/plant-b", nil).Want(http.StatusNoContent)
		api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(b.Token)...).
			WantError(http.StatusUnauthorized, "AuthenticationError", "Invalid agent token")
	})
}

// TestChangeFlags: a router-config write raises microserviceConfig with a
// newer lastUpdated; acknowledging an older one keeps it up, the current
// one clears it.
func TestChangeFlags(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		a := createAgent(t, api, map[string]any{"name": "plant-a"})
		agentAuth := bearer(a.Token)
		changes := func() store.Changes {
			t.Helper()
			var ch store.Changes
			r := api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, agentAuth...).Want(http.StatusOK)
			if m := r.Map(); len(m) != 2 {
				t.Fatalf("changes = %s, want microserviceConfig and lastUpdated only", r.Body)
			}
			r.Decode(&ch)
			return ch
		}
		ack := func(n int64) {
			t.Helper()
			api.JSON(http.MethodPatch, "/api/v3/agent/config/changes", map[string]any{"lastUpdated": n}, agentAuth...).Want(http.StatusNoContent)
		}

		// A new router starts with its (empty) config to fetch.
		first := changes()
		if !first.MicroserviceConfig || first.LastUpdated <= 0 {
			t.Fatalf("new agent's changes = %+v", first)
		}
		ack(first.LastUpdated)
		if ch := changes(); ch.MicroserviceConfig || ch.LastUpdated != first.LastUpdated {
			t.Fatalf("after ack = %+v", ch)
		}

		// The site svcbridge keeps in the document stays: agent edits
		// that do not move it leave the document alone.
		withSite := func(doc string) string {
			sited, _, err := routerconfig.WithSite([]byte(doc), routerconfig.Site{ID: a.UUID, Mode: routerconfig.ModeEdge})
			if err != nil {
				t.Fatal(err)
			}
			return string(sited)
		}
		writeRouterConfig(t, st, a.UUID, withSite(routerconfig.Empty))
		one := changes()
		if !one.MicroserviceConfig || one.LastUpdated <= first.LastUpdated {
			t.Fatalf("after a write = %+v (previous lastUpdated %d)", one, first.LastUpdated)
		}
		writeRouterConfig(t, st, a.UUID, withSite(`{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"x":1}`))
		two := changes()
		if !two.MicroserviceConfig || two.LastUpdated <= one.LastUpdated {
			t.Fatalf("after a second write = %+v (previous %d)", two, one.LastUpdated)
		}
		ack(one.LastUpdated)
		if ch := changes(); !ch.MicroserviceConfig || ch.LastUpdated != two.LastUpdated {
			t.Fatalf("acknowledging the older change cleared the newer: %+v", ch)
		}
		ack(two.LastUpdated)
		if ch := changes(); ch.MicroserviceConfig {
			t.Fatalf("acknowledging the current change left the flag up: %+v", ch)
		}

		// Agent edits that keep the router do not rewrite its config;
		// the reconcile that follows does, and raises the flag then.
		api.JSON(http.MethodPatch, "/api/v3/agents/plant-a", `{"tags":["t"]}`).Want(http.StatusOK)
		if ch := changes(); ch.MicroserviceConfig {
			t.Fatalf("a tag PATCH raised the flag by itself: %+v", ch)
		}
	})
}

// TestAgentCreateRace: concurrent creates that each pass the checks in
// their own transaction still end with one winner and clear 409s (the
// constraint violations are mapped, never a 500).
func TestAgentCreateRace(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		const n = 8
		post := func(bodies func(i int) string) []*testResponse { return api.PostAtOnce("/api/v3/agents", n, bodies) }
		check := func(what string, rs []*testResponse, message func(winner string) string) {
			t.Helper()
			var winners []string
			for _, r := range rs {
				if r.Status == http.StatusCreated {
					winners = append(winners, r.Map()["name"].(string))
				}
			}
			if len(winners) != 1 {
				t.Fatalf("%s: %d creates succeeded, want 1", what, len(winners))
			}
			for _, r := range rs {
				if r.Status != http.StatusCreated {
					r.WantError(http.StatusConflict, "DuplicatePropertyError", message(winners[0]))
				}
			}
		}
		check("same name", post(func(int) string { return `{"name":"twin"}` }),
			func(string) string { return "Agent with name twin already exists" })
		check("default routers", post(func(i int) string {
			return fmt.Sprintf(`{"name":"hub-%d","routerMode":"interior","defaultRouter":true}`, i)
		}), func(w string) string {
			return "Agent " + w + " is already the default router; only one agent can be the default router"
		})
		var agents []inventory.Agent
		api.Do(http.MethodGet, "/api/v3/agents", nil).Want(http.StatusOK).Decode(&agents)
		if len(agents) != 2 {
			t.Fatalf("%d agents stored, want 2", len(agents))
		}
	})
}
