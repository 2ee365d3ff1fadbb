package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"svcbridge/auth"
	"svcbridge/buildinfo"
	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/wire"
)

// The ioFog Go SDK's read shapes (iofog-go-sdk/v3 pkg/client: AgentInfo,
// ListAgentsResponse, MicroserviceInfo, MicroserviceListResponse), field
// for field, as potctl decodes the answers of its reads.
type (
	sdkAgentInfo struct {
		UUID                      string    `json:"uuid"`
		Name                      string    `json:"name"`
		Host                      string    `json:"host"`
		Location                  string    `json:"location"`
		Latitude                  float64   `json:"latitude"`
		Longitude                 float64   `json:"longitude"`
		Description               string    `json:"description"`
		DockerURL                 string    `json:"dockerUrl"`
		ContainerEngine           string    `json:"containerEngine"`
		DeploymentType            string    `json:"deploymentType"`
		DiskLimit                 int64     `json:"diskLimit"`
		DiskDirectory             string    `json:"diskDirectory"`
		MemoryLimit               int64     `json:"memoryLimit"`
		CPULimit                  int64     `json:"cpuLimit"`
		LogLimit                  int64     `json:"logLimit"`
		LogDirectory              string    `json:"logDirectory"`
		LogFileCount              int64     `json:"logFileCount"`
		StatusFrequency           float64   `json:"statusFrequency"`
		ChangeFrequency           float64   `json:"changeFrequency"`
		DeviceScanFrequency       float64   `json:"deviceScanFrequency"`
		BluetoothEnabled          bool      `json:"bluetoothEnabled"`
		WatchdogEnabled           bool      `json:"watchdogEnabled"`
		GpsMode                   string    `json:"gpsMode"`
		GpsScanFrequency          float64   `json:"gpsScanFrequency"`
		GpsDevice                 string    `json:"gpsDevice"`
		EdgeGuardFrequency        float64   `json:"edgeGuardFrequency"`
		AbstractedHardwareEnabled bool      `json:"abstractedHardwareEnabled"`
		CreatedTimeRFC3339        string    `json:"createdAt"`
		UpdatedTimeRFC3339        string    `json:"updatedAt"`
		LastActive                int64     `json:"lastActive"`
		DaemonStatus              string    `json:"daemonStatus"`
		UptimeMs                  int64     `json:"daemonOperatingDuration"`
		MemoryUsage               float64   `json:"memoryUsage"`
		DiskUsage                 float64   `json:"diskUsage"`
		CPUUsage                  float64   `json:"cpuUsage"`
		SystemAvailableMemory     float64   `json:"systemAvailableMemory"`
		SystemAvailableDisk       float64   `json:"systemAvailableDisk"`
		MemoryViolation           string    `json:"memoryViolation"`
		DiskViolation             string    `json:"diskViolation"`
		CPUViolation              string    `json:"cpuViolation"`
		MicroserviceStatus        string    `json:"microserviceStatus"`
		RepositoryCount           int64     `json:"repositoryCount"`
		RepositoryStatus          string    `json:"repositoryStatus"`
		LastStatusTimeMsUTC       int64     `json:"lastStatusTime"`
		IPAddress                 string    `json:"ipAddress"`
		IPAddressExternal         string    `json:"ipAddressExternal"`
		ProcessedMessaged         int64     `json:"processedMessages"`
		MicroserviceMessageCount  int64     `json:"microserviceMessageCounts"`
		MessageSpeed              float64   `json:"messageSpeed"`
		LastCommandTimeMsUTC      int64     `json:"lastCommandTime"`
		NetworkInterface          string    `json:"networkInterface"`
		Version                   string    `json:"version"`
		IsReadyToUpgrade          bool      `json:"isReadyToUpgrade"`
		IsReadyToRollback         bool      `json:"isReadyToRollback"`
		Tunnel                    string    `json:"tunnel"`
		FogType                   int       `json:"fogTypeId"`
		RouterMode                string    `json:"routerMode"`
		NetworkRouter             *string   `json:"networkRouter,omitempty"`
		UpstreamRouters           *[]string `json:"upstreamRouters,omitempty"`
		MessagingPort             *int      `json:"messagingPort,omitempty"`
		EdgeRouterPort            *int      `json:"edgeRouterPort,omitempty"`
		InterRouterPort           *int      `json:"interRouterPort,omitempty"`
		LogLevel                  *string   `json:"logLevel"`
		DockerPruningFrequency    *float64  `json:"dockerPruningFrequency"`
		AvailableDiskThreshold    *float64  `json:"availableDiskThreshold"`
		Tags                      *[]string `json:"tags,omitempty"`
		TimeZone                  string    `json:"timeZone"`
		IsSystem                  bool      `json:"isSystem"`
	}
	sdkListAgentsResponse struct {
		Agents []sdkAgentInfo `json:"fogs"`
	}
	sdkMicroserviceInfo struct {
		UUID              string   `json:"uuid"`
		Config            string   `json:"config"`
		Name              string   `json:"name"`
		RootHostAccess    bool     `json:"rootHostAccess"`
		Schedule          int      `json:"schedule"`
		PidMode           string   `json:"pidMode,omitempty"`
		IpcMode           string   `json:"ipcMode,omitempty"`
		Runtime           string   `json:"runtime,omitempty"`
		Platform          string   `json:"platform,omitempty"`
		RunAsUser         string   `json:"runAsUser,omitempty"`
		CdiDevices        []string `json:"cdiDevices,omitempty"`
		CapAdd            []string `json:"capAdd,omitempty"`
		CapDrop           []string `json:"capDrop,omitempty"`
		LogSize           int      `json:"logSize"`
		Delete            bool     `json:"delete"`
		DeleteWithCleanup bool     `json:"deleteWithCleanup"`
		FlowID            int      `json:"flowId"`
		ApplicationID     int      `json:"applicationID"`
		Application       string   `json:"application"`
		CatalogItemID     int      `json:"catalogItemId"`
		AgentUUID         string   `json:"iofogUuid"`
		UserID            int      `json:"userId"`
		RegistryID        int      `json:"registryId"`
		Ports             []struct {
			Internal int64  `json:"internal"`
			External int64  `json:"external"`
			Protocol string `json:"protocol,omitempty"`
		} `json:"ports"`
		Volumes []struct {
			HostDestination      string `json:"hostDestination"`
			ContainerDestination string `json:"containerDestination"`
			AccessMode           string `json:"accessMode"`
			Type                 string `json:"type,omitempty"`
		} `json:"volumeMappings"`
		Commands []string `json:"cmd"`
		Env      []struct {
			Key   string `json:"key"`
			Value string `json:"value,omitempty"`
		} `json:"env"`
		ExtraHosts []struct {
			Name    string `json:"name,omitempty"`
			Address string `json:"address,omitempty"`
			Value   string `json:"value,omitempty"`
		} `json:"extraHosts"`
		Status struct {
			Status       string `json:"status"`
			StartTime    int64  `json:"startTime"`
			ErrorMessage string `json:"errorMessage"`
		} `json:"status"`
		Images []struct {
			ContainerImage string `json:"containerImage"`
			AgentTypeID    int    `json:"fogTypeId"`
		} `json:"images"`
		PubTags     []string `json:"pubTags"`
		SubTags     []string `json:"subTags"`
		Annotations string   `json:"annotations"`
	}
	// The SDK's MicroserviceListResponse has no tag: encoding/json
	// matches "microservices" to the field case-insensitively.
	sdkMicroserviceListResponse struct {
		Microservices []sdkMicroserviceInfo
	}
)

// sdkDecode decodes an answer as the SDK does (json.Unmarshal, unknown
// fields ignored), failing the test where the SDK would fail.
func sdkDecode(t *testing.T, r *testResponse, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s: the SDK cannot decode the answer into %T: %v\n%s", r.req, v, err, r.Body)
	}
}

// potctlVersionOK is potctl's check of versions.controller before
// `get microservices`: N.N.N with a major of at least 2.
func potctlVersionOK(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	var n [3]int
	for i, p := range parts {
		var err error
		if n[i], err = strconv.Atoi(p); err != nil || n[i] < 0 {
			return false
		}
	}
	return n[0] >= 2
}

// TestPotctlContractReads replays the reads of potctl (SDK v3.5.1),
// recorded against the reference controller: get agents, describe agent,
// get microservices, describe microservice and get all. Every answer must
// decode into the SDK's shapes and say what svcbridge holds.
func TestPotctlContractReads(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		core := createAgent(t, api, map[string]any{"name": "core", "host": "core.example.com", "routerMode": "interior", "upstreamRouters": []string{"hub"}})
		plant := createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub", "core"}, "tags": []string{"service.iofog.org/tag: shop"}})
		createAgent(t, api, map[string]any{"name": "sensor", "routerMode": "none"})
		web := createMicroservice(t, api, map[string]any{"application": "shop", "name": "web", "agent": "plant-a", "hostNetworkMode": true})
		createMicroservice(t, api, map[string]any{"application": "billing", "name": "ledger", "agent": "core"})

		// Every command builds its session first.
		var st sdkControllerStatus
		sdkDecode(t, api.Do("GET", "/api/v3/status", nil, noBearer...).Want(200), &st)
		if st.Versions.Controller != buildinfo.IofogAPIVersion || !potctlVersionOK(st.Versions.Controller) {
			t.Fatalf("versions.controller %q: potctl refuses it", st.Versions.Controller)
		}
		var sess sdkLoginResponse
		api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: testTokens[auth.Viewer]}, noBearer...).Want(200).Decode(&sess)
		as := bearer(sess.AccessToken)

		// potctl get agents (and get all's agents): the list, by name.
		var agents sdkListAgentsResponse
		sdkDecode(t, api.Do("GET", "/api/v3/iofog-list", nil, as...).Want(200), &agents)
		byName := map[string]sdkAgentInfo{}
		var names []string
		for _, a := range agents.Agents {
			byName[a.Name] = a
			names = append(names, a.Name)
		}
		if !slices.Equal(names, []string{"core", "hub", "plant-a", "sensor"}) {
			t.Fatalf("iofog-list names %v", names)
		}
		p := byName["plant-a"]
		if p.UUID != plant.UUID || p.RouterMode != "edge" || p.IsSystem || p.UpstreamRouters == nil ||
			!slices.Equal(*p.UpstreamRouters, []string{"default-router", core.UUID}) || p.Tags == nil || !slices.Equal(*p.Tags, plant.Tags) {
			t.Fatalf("plant-a as the SDK reads it: %+v", p)
		}
		if h := byName["hub"]; !h.IsSystem || h.RouterMode != "interior" || h.Host != "hub.example.com" {
			t.Fatalf("hub as the SDK reads it: %+v", h)
		}
		if s := byName["sensor"]; s.RouterMode != "none" || s.UpstreamRouters != nil {
			t.Fatalf("sensor as the SDK reads it: %+v", s)
		}
		if _, err := time.Parse(time.RFC3339, p.CreatedTimeRFC3339); err != nil || p.DaemonStatus != "NOT_PROVISIONED" {
			t.Fatalf("plant-a createdAt %q, daemonStatus %q", p.CreatedTimeRFC3339, p.DaemonStatus)
		}

		// potctl describe agent plant-a: found in the list, then by uuid.
		var one sdkAgentInfo
		sdkDecode(t, api.Do("GET", "/api/v3/iofog/"+plant.UUID, nil, as...).Want(200), &one)
		if one.UUID != plant.UUID || one.Name != "plant-a" || !slices.Equal(*one.UpstreamRouters, *p.UpstreamRouters) {
			t.Fatalf("describe agent: %+v", one)
		}
		api.Do("GET", "/api/v3/iofog/"+hub.UUID, nil, as...).Want(200)

		// potctl get microservices (and get all's): all of them in one call.
		var all sdkMicroserviceListResponse
		sdkDecode(t, api.Do("GET", "/api/v3/microservices", nil, as...).Want(200), &all)
		var msNames []string
		for _, m := range all.Microservices {
			msNames = append(msNames, m.Application+"/"+m.Name)
		}
		if !slices.Equal(msNames, []string{"billing/ledger", "shop/web"}) {
			t.Fatalf("microservices %v", msNames)
		}

		// potctl describe microservice shop/web: the application's list,
		// then the one named web.
		var shop sdkMicroserviceListResponse
		sdkDecode(t, api.Do("GET", "/api/v3/microservices?application=shop", nil, as...).Want(200), &shop)
		if len(shop.Microservices) != 1 {
			t.Fatalf("application shop: %+v", shop)
		}
		m := shop.Microservices[0]
		if m.UUID != web.UUID || m.Name != "web" || m.Application != "shop" || m.AgentUUID != plant.UUID || m.Config != "{}" || m.FlowID != 0 {
			t.Fatalf("shop/web as the SDK reads it: %+v", m)
		}
		var byID sdkMicroserviceInfo
		sdkDecode(t, api.Do("GET", "/api/v3/microservices/"+web.UUID, nil, as...).Want(200), &byID)
		if byID.UUID != web.UUID || byID.AgentUUID != plant.UUID {
			t.Fatalf("GET microservice by uuid, as the SDK reads it: %+v", byID)
		}

		// get all goes on with services, then applications: the
		// applications of the microservices (TestPotctlContractLists).
		var services []sdkServiceInfo
		sdkDecode(t, api.Do("GET", "/api/v3/services", nil, as...).Want(200), &services)
		var apps sdkApplicationListResponse
		sdkDecode(t, api.Do("GET", "/api/v3/application", nil, as...).Want(200), &apps)
		if len(apps.Applications) != 2 || apps.Applications[1].Name != "shop" || len(apps.Applications[1].Microservices) != 1 {
			t.Fatalf("applications %+v", apps)
		}
	})
}

// TestIofogReads: the reference routes over the inventory on both stores:
// shapes, ?application= and the agents' filters, 404s in the reference's
// words, 400s for bad queries, and the roles of svcbridge's own reads.
func TestIofogReads(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		plant := createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub"}, "tags": []string{"zone-a", "gpu"}})
		createAgent(t, api, map[string]any{"name": "plant-b", "upstreamRouters": []string{"hub"}, "tags": []string{"zone-b"}})
		for _, app := range []string{"shop", "billing"} {
			for _, n := range []string{"web", "db", "cache"} {
				createMicroservice(t, api, map[string]any{"application": app, "name": n, "agent": "plant-a"})
			}
		}

		fogNames := func(query string) []string {
			t.Helper()
			var l wire.FogList
			api.Do("GET", "/api/v3/iofog-list"+query, nil).Want(200).Decode(&l)
			var out []string
			for _, f := range l.Fogs {
				out = append(out, f.Name)
			}
			return out
		}
		filter := func(kv ...string) string {
			q := url.Values{}
			for i := 0; i < len(kv); i += 4 {
				n := "filters[" + kv[i] + "]"
				q.Set(n+"[key]", kv[i+1])
				q.Set(n+"[value]", kv[i+2])
				q.Set(n+"[condition]", kv[i+3])
			}
			return "?" + q.Encode()
		}
		for _, tc := range []struct {
			name, query string
			want        []string
		}{
			{"no filter", "", []string{"hub", "plant-a", "plant-b"}},
			{"name equals", filter("0", "name", "plant-b", "equals"), []string{"plant-b"}},
			{"name has", filter("0", "name", "plant", "has"), []string{"plant-a", "plant-b"}},
			{"tag has", filter("0", "tags", "gpu", "has"), []string{"plant-a"}},
			{"two filters, both apply", filter("0", "name", "plant", "has", "1", "tags", "zone-b", "has"), []string{"plant-b"}},
			{"boolean equals", filter("0", "isSystem", "true", "equals"), []string{"hub"}},
			{"routerMode equals", filter("0", "routerMode", "interior", "equals"), []string{"hub"}},
			{"unknown field matches nothing", filter("0", "colour", "red", "equals"), nil},
			{"the SDK's system=false ignored", "?system=false", []string{"hub", "plant-a", "plant-b"}},
		} {
			if got := fogNames(tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("%s (%s): %v, want %v", tc.name, tc.query, got, tc.want)
			}
		}
		api.Do("GET", "/api/v3/iofog-list"+filter("0", "name", "x", "like"), nil).WantError(400, "ValidationError", "Filter 0: condition must be equals or has")
		api.Do("GET", "/api/v3/iofog-list?filters[0][value]=x&filters[0][condition]=has", nil).WantError(400, "ValidationError", "Filter 0 has no key")
		api.Do("GET", "/api/v3/iofog-list?filters[0][name]=x", nil).WantError(400, "ValidationError", "Query parameter 'filters[0][name]' is not filters[N][key|value|condition]")
		api.Do("GET", "/api/v3/iofog-list"+filter("20", "name", "x", "has"), nil).WantError(400, "ValidationError", "Query parameter 'filters[20][condition]': at most 20 filters, numbered from 0")

		var f wire.Fog
		api.Do("GET", "/api/v3/iofog/"+plant.UUID, nil).Want(200).Decode(&f)
		if f.Name != "plant-a" || !slices.Equal(f.UpstreamRouters, []string{"default-router"}) {
			t.Fatalf("GET /iofog/{uuid}: %+v", f)
		}
		// By uuid only: a name is not an agent's uuid.
		api.Do("GET", "/api/v3/iofog/plant-a", nil).WantError(404, "NotFoundError", "Invalid ioFog UUID 'plant-a'")
		api.Do("GET", "/api/v3/iofog/00000000-0000-4000-8000-000000000000", nil).WantError(404, "NotFoundError", "Invalid ioFog UUID '00000000-0000-4000-8000-000000000000'")

		// Microservices: the reference's list, one application's, paged.
		msNames := func(r *testResponse) []string {
			var l wire.MicroserviceList
			r.Decode(&l)
			var out []string
			for _, m := range l.Microservices {
				out = append(out, m.Application+"/"+m.Name)
			}
			return out
		}
		if got := msNames(api.Do("GET", "/api/v3/microservices?application=shop", nil).Want(200)); !slices.Equal(got, []string{"shop/cache", "shop/db", "shop/web"}) {
			t.Errorf("?application=shop: %v", got)
		}
		// An application no microservice is in: none (the reference's
		// 404 would fail potctl's deploy of its first microservice).
		if got := api.Do("GET", "/api/v3/microservices?application=nope", nil).Want(200); string(got.Body) != `{"microservices":[]}` {
			t.Errorf("?application=nope: %s", got.Body)
		}
		// With ?name=, the one of that name in the application, or none;
		// a name alone names nothing.
		if got := msNames(api.Do("GET", "/api/v3/microservices?application=shop&name=db", nil).Want(200)); !slices.Equal(got, []string{"shop/db"}) {
			t.Errorf("?application=shop&name=db: %v", got)
		}
		for _, q := range []string{"application=shop&name=nope", "application=nope&name=db"} {
			if got := api.Do("GET", "/api/v3/microservices?"+q, nil).Want(200); string(got.Body) != `{"microservices":[]}` {
				t.Errorf("?%s: %s", q, got.Body)
			}
		}
		api.Do("GET", "/api/v3/microservices?name=db", nil).WantError(400, "ValidationError",
			"Query parameter 'name' needs 'application': a microservice is named within its application")
		var paged []string
		token := ""
		for range 3 {
			q := url.Values{"limit": {"2"}, "application": {"billing"}}
			if token != "" {
				q.Set("continue", token)
			}
			r := api.Do("GET", "/api/v3/microservices?"+q.Encode(), nil).Want(200)
			paged = append(paged, msNames(r)...)
			if token = r.Header.Get(ContinueHeader); token == "" {
				break
			}
		}
		if !slices.Equal(paged, []string{"billing/cache", "billing/db", "billing/web"}) || token != "" {
			t.Errorf("billing in pages of 2: %v (next %q)", paged, token)
		}
		api.Do("GET", "/api/v3/microservices?limit=0", nil).WantError(400, "ValidationError", "Query parameter 'limit' must be a positive integer")

		// Roles: every role reads; no token is a 401.
		for _, path := range []string{"/api/v3/iofog-list", "/api/v3/iofog/" + plant.UUID, "/api/v3/microservices"} {
			api.Do("GET", path, nil, bearer(testTokens[auth.Viewer])...).Want(200)
			api.Do("GET", path, nil, noBearer...).Want(http.StatusUnauthorized)
		}
		// The reference's writes take the roles of the native ones.
		api.JSON("PATCH", "/api/v3/iofog/"+plant.UUID, map[string]any{"name": "x"}, bearer(testTokens[auth.Viewer])...).Want(http.StatusForbidden)
	})
}

// TestMicroserviceAnswerGoesBack: a microservice's answer, with the
// reference's fields, is a valid PATCH body (the reference's fields are
// accepted and ignored).
func TestMicroserviceAnswerGoesBack(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	m := createMicroservice(t, api, map[string]any{"application": "shop", "name": "web", "agent": "hub"})
	body := api.Do("GET", "/api/v3/microservices/"+m.UUID, nil).Want(200).Body
	api.JSON("PATCH", "/api/v3/microservices/"+m.UUID, string(body)).Want(200)
}

func TestIofogAgent(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 40, 1, 234_000_000, time.FixedZone("CET", 3600))
	agent := func(f func(*inventory.Agent)) inventory.Agent {
		a := inventory.NewAgent("a-uuid")
		a.Name, a.Host, a.CreatedAt, a.UpdatedAt = "plant-a", "plant.example.com", at, at
		f(&a)
		return a
	}
	for _, tc := range []struct {
		name          string
		a             inventory.Agent
		defaultRouter string
		isSystem      bool
		upstream      []string
	}{
		{"edge without upstreams", agent(func(*inventory.Agent) {}), "hub-uuid", false, []string{}},
		{"the default router is named so", agent(func(a *inventory.Agent) { a.UpstreamRouters = []string{"hub-uuid", "core-uuid"} }), "hub-uuid", false, []string{"default-router", "core-uuid"}},
		{"no default router", agent(func(a *inventory.Agent) { a.UpstreamRouters = []string{"core-uuid"} }), "", false, []string{"core-uuid"}},
		{"the default router's agent is the system agent", agent(func(a *inventory.Agent) { a.RouterMode, a.DefaultRouter = "interior", true }), "a-uuid", true, []string{}},
		{"no router: no upstream routers", agent(func(a *inventory.Agent) { a.RouterMode = "none" }), "hub-uuid", false, nil},
	} {
		f := iofogAgent(tc.a, tc.defaultRouter)
		if f.UUID != "a-uuid" || f.Name != "plant-a" || f.Host != "plant.example.com" || f.RouterMode != tc.a.RouterMode || f.IsSystem != tc.isSystem {
			t.Errorf("%s: %+v", tc.name, f)
		}
		if !slices.Equal(f.UpstreamRouters, tc.upstream) || (f.UpstreamRouters == nil) != (tc.upstream == nil) {
			t.Errorf("%s: upstreamRouters %#v, want %#v", tc.name, f.UpstreamRouters, tc.upstream)
		}
		if f.CreatedAt != "2026-12-03T15:40:01.234Z" || f.Tags == nil {
			t.Errorf("%s: createdAt %q tags %#v", tc.name, f.CreatedAt, f.Tags)
		}
		// What svcbridge does not hold is the reference's unset value.
		if f.DaemonStatus != "NOT_PROVISIONED" || f.Location != "" || f.Description != "" || f.Latitude != nil || f.IPAddress != "0.0.0.0" || f.IPAddressExternal != tc.a.Host || f.LogLevel != "INFO" || f.VolumeMounts == nil {
			t.Errorf("%s: unset fields %+v", tc.name, f)
		}
	}
}

func TestIofogMicroservice(t *testing.T) {
	m := iofogMicroservice(inventory.Microservice{UUID: "m", Application: "shop", Name: "web", AgentUUID: "a-uuid", HostNetworkMode: true})
	b, _ := json.Marshal(m)
	var got map[string]any
	json.Unmarshal(b, &got)
	for key, want := range map[string]any{
		"iofogUuid": "a-uuid", "flowId": nil, "applicationId": nil, "config": "{}", "annotations": "{}",
		"schedule": 50.0, "isActivated": true, "isPrivileged": false, "logSize": 0.0, "catalogItemId": nil,
		"ports": []any{}, "env": []any{}, "cmd": []any{}, "images": []any{}, "pubTags": []any{},
	} {
		if v, ok := got[key]; !ok || !equalJSON(v, want) {
			t.Errorf("%s = %#v (present %v), want %#v", key, v, ok, want)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestParseFogFilters(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		want        []fogFilter
		err         string
	}{
		{"none", "system=true", []fogFilter{}, ""},
		{"in index order", "filters[1][key]=b&filters[1][value]=2&filters[1][condition]=has&filters[0][key]=a&filters[0][value]=1&filters[0][condition]=equals",
			[]fogFilter{{"a", "1", "equals"}, {"b", "2", "has"}}, ""},
		{"empty value", "filters[0][key]=a&filters[0][condition]=has", []fogFilter{{"a", "", "has"}}, ""},
		{"no key", "filters[0][value]=1&filters[0][condition]=has", nil, "Filter 0 has no key"},
		{"bad condition", "filters[0][key]=a&filters[0][condition]=like", nil, "Filter 0: condition must be equals or has"},
		{"not a filter", "filters=a", nil, "Query parameter 'filters' is not filters[N][key|value|condition]"},
		{"given twice", "filters[0][key]=a&filters[0][key]=b&filters[0][condition]=has", nil, "Query parameter 'filters[0][key]' is given 2 times"},
		{"too many", "filters[99999999999999999999][key]=a", nil, "Query parameter 'filters[99999999999999999999][key]': at most 20 filters, numbered from 0"},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := parseFogFilters(q)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestFogMatches(t *testing.T) {
	f := iofogAgent(inventory.Agent{UUID: "u", Name: "plant-a", Host: "p.example.com", RouterMode: "edge",
		Tags: []string{"zone-a", "gpu"}, UpstreamRouters: []string{"hub"}}, "hub")
	for _, tc := range []struct {
		filters []fogFilter
		want    bool
	}{
		{nil, true},
		{[]fogFilter{{"name", "plant-a", "equals"}}, true},
		{[]fogFilter{{"name", "plant", "equals"}}, false},
		{[]fogFilter{{"name", "ant", "has"}}, true},
		{[]fogFilter{{"tags", "gpu", "has"}}, true},
		{[]fogFilter{{"tags", "gp", "has"}}, false},
		{[]fogFilter{{"tags", "gpu", "equals"}}, false},
		{[]fogFilter{{"upstreamRouters", "default-router", "has"}}, true},
		{[]fogFilter{{"isSystem", "false", "equals"}}, true},
		{[]fogFilter{{"diskLimit", "50", "equals"}}, true},
		{[]fogFilter{{"location", "", "equals"}}, true},  // "", as the reference answers it
		{[]fogFilter{{"latitude", "", "equals"}}, false}, // null matches nothing
		{[]fogFilter{{"name", "plant-a", "equals"}, {"host", "other", "has"}}, false},
	} {
		if got := fogMatches(f, tc.filters); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.filters, got, tc.want)
		}
	}
}

func TestOfApplication(t *testing.T) {
	var sorted []inventory.Microservice
	for _, am := range []string{"a/x", "b/x", "b/y", "bb/x", "c/x"} {
		app, name, _ := strings.Cut(am, "/")
		sorted = append(sorted, inventory.Microservice{Application: app, Name: name})
	}
	for _, tc := range []struct {
		app  string
		want []string // names; nil: none
	}{
		{"a", []string{"x"}},
		{"b", []string{"x", "y"}},
		{"bb", []string{"x"}},
		{"c", []string{"x"}},
		{"", nil},
		{"ab", nil},
		{"d", nil},
	} {
		var names []string
		for _, m := range ofApplication(sorted, tc.app) {
			if m.Application != tc.app {
				t.Errorf("%q: %+v", tc.app, m)
			}
			names = append(names, m.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%q: %v; want %v", tc.app, names, tc.want)
		}
	}
	if got := ofApplication(nil, "a"); len(got) != 0 {
		t.Errorf("no microservices: %v", got)
	}
}
