package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"svcbridge/auth"
	"svcbridge/inventory"
	"svcbridge/wire"
)

// What potctl writes to agents and microservices, and the lists its get
// all reads beside them, replayed as potctl (v3.5.1) and the ioFog Go SDK
// (datasance/iofog-go-sdk/v3 v3.5.1, pkg/client and pkg/apps) send them.
// The SDK is no dependency of svcbridge: sdkClient's methods make the
// SDK client's calls, one for one (method, path, Content-Type, body, the
// status that is an error), with its request and answer types, and the
// potctl* functions the calls of potctl's commands, in their order.

// The SDK's request and answer types beyond those of iofog_test.go and
// session_test.go, field for field.
type (
	sdkRouterConfig struct {
		RouterMode      *string `json:"routerMode,omitempty"`
		MessagingPort   *int    `json:"messagingPort,omitempty"`
		EdgeRouterPort  *int    `json:"edgeRouterPort,omitempty"`
		InterRouterPort *int    `json:"interRouterPort,omitempty"`
	}
	sdkAgentConfiguration struct {
		NetworkInterface          *string   `json:"networkInterface,omitempty"`
		DockerURL                 *string   `json:"dockerUrl,omitempty"`
		ContainerEngine           *string   `json:"containerEngine,omitempty"`
		DeploymentType            *string   `json:"deploymentType,omitempty"`
		DiskLimit                 *int64    `json:"diskLimit,omitempty"`
		DiskDirectory             *string   `json:"diskDirectory,omitempty"`
		MemoryLimit               *int64    `json:"memoryLimit,omitempty"`
		CPULimit                  *int64    `json:"cpuLimit,omitempty"`
		LogLimit                  *int64    `json:"logLimit,omitempty"`
		LogDirectory              *string   `json:"logDirectory,omitempty"`
		LogFileCount              *int64    `json:"logFileCount,omitempty"`
		StatusFrequency           *float64  `json:"statusFrequency,omitempty"`
		ChangeFrequency           *float64  `json:"changeFrequency,omitempty"`
		DeviceScanFrequency       *float64  `json:"deviceScanFrequency,omitempty"`
		BluetoothEnabled          *bool     `json:"bluetoothEnabled,omitempty"`
		WatchdogEnabled           *bool     `json:"watchdogEnabled,omitempty"`
		GpsMode                   *string   `json:"gpsMode,omitempty"`
		GpsScanFrequency          *float64  `json:"gpsScanFrequency,omitempty"`
		GpsDevice                 *string   `json:"gpsDevice,omitempty"`
		EdgeGuardFrequency        *float64  `json:"edgeGuardFrequency,omitempty"`
		AbstractedHardwareEnabled *bool     `json:"abstractedHardwareEnabled,omitempty"`
		IsSystem                  *bool     `json:"isSystem,omitempty"`
		UpstreamRouters           *[]string `json:"upstreamRouters,omitempty"`
		NetworkRouter             *string   `json:"networkRouter,omitempty"`
		Host                      *string   `json:"host,omitempty"`
		sdkRouterConfig           `json:",omitempty"`
		LogLevel                  *string  `json:"logLevel,omitempty"`
		DockerPruningFrequency    *float64 `json:"dockerPruningFrequency,omitempty"`
		AvailableDiskThreshold    *float64 `json:"availableDiskThreshold,omitempty"`
		TimeZone                  string   `json:"timeZone,omitempty"`
	}
	sdkAgentUpdateRequest struct {
		UUID        string    `json:"-"`
		Name        string    `json:"name,omitempty"`
		Location    string    `json:"location,omitempty"`
		Latitude    float64   `json:"latitude,omitempty"`
		Longitude   float64   `json:"longitude,omitempty"`
		Description string    `json:"description,omitempty"`
		FogType     *int64    `json:"fogType,omitempty"`
		Tags        *[]string `json:"tags,omitempty"`
		sdkAgentConfiguration
	}
	// potctl's rsc.AgentConfiguration: what describe agent-config prints
	// and deploy of an AgentConfig reads.
	potctlAgentConfig struct {
		Name        string
		Location    string
		Latitude    float64
		Longitude   float64
		Description string
		FogType     *string
		sdkAgentConfiguration
	}
	sdkApplicationInfo struct {
		Name          string                `json:"name"`
		Description   string                `json:"description"`
		IsActivated   bool                  `json:"isActivated"`
		IsSystem      bool                  `json:"isSystem"`
		UserID        int                   `json:"userId"`
		ID            int                   `json:"id"`
		Microservices []sdkMicroserviceInfo `json:"microservices"`
		Routes        []struct {
			Name        string `json:"name"`
			Application string `json:"application"`
			From        string `json:"from"`
			To          string `json:"to"`
		} `json:"routes"`
	}
	sdkApplicationListResponse struct {
		Applications []sdkApplicationInfo `json:"applications"`
	}
	sdkMicroserviceCreateResponse struct {
		UUID string `json:"uuid"`
	}
	sdkRouteListResponse struct {
		Routes []struct {
			Name string `json:"name"`
		} `json:"routes"`
	}
	sdkVolumeMountListResponse struct {
		VolumeMounts []struct {
			Name string `json:"name"`
		} `json:"volumeMounts"`
	}
	// The SDK's apps.Microservice, as potctl's move builds it from the
	// controller's answer (describe.MapClientMicroserviceToDeployMicroservice)
	// and marshals it into a kind: Microservice document.
	sdkAppsMicroservice struct {
		UUID  string `yaml:"uuid"`
		Name  string `yaml:"name"`
		Agent struct {
			Name   string         `yaml:"name"`
			Config map[string]any `yaml:"config"`
		} `yaml:"agent"`
		Images *struct {
			CatalogID int    `yaml:"catalogId"`
			X86       string `yaml:"x86"`
			ARM       string `yaml:"arm"`
			Registry  string `yaml:"registry"`
		} `yaml:"images,omitempty"`
		Container struct {
			Commands       []string          `yaml:"commands,omitempty"`
			Volumes        *[]map[string]any `yaml:"volumes,omitempty"`
			Env            *[]map[string]any `yaml:"env,omitempty"`
			ExtraHosts     *[]map[string]any `yaml:"extraHosts,omitempty"`
			Ports          []map[string]any  `yaml:"ports"`
			RootHostAccess bool              `yaml:"rootHostAccess"`
			Runtime        string            `yaml:"runtime,omitempty"`
			Platform       string            `yaml:"platform,omitempty"`
			RunAsUser      string            `yaml:"runAsUser,omitempty"`
			CdiDevices     []string          `yaml:"cdiDevices,omitempty"`
		} `yaml:"container,omitempty"`
		Schedule    int            `yaml:"schedule"`
		Config      map[string]any `yaml:"config"`
		Application *string        `yaml:"application,omitempty"`
	}
	// The SDK's apps.IofogHeader: the document it uploads.
	sdkIofogHeader struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Spec any `yaml:"spec"`
	}
)

// sdkClient is the ioFog Go SDK's client of one session.
type sdkClient struct {
	t     *testing.T
	api   *testAPI
	as    []string
	calls *[]string // the requests made, "METHOD path", session first
}

// newSDKClient builds potctl's session (status, then refresh) for the
// token of role.
func newSDKClient(t *testing.T, api *testAPI, role auth.Role) sdkClient {
	t.Helper()
	c := sdkClient{t: t, api: api, calls: new([]string)}
	var st sdkControllerStatus
	sdkDecode(t, c.made(api.Do("GET", "/api/v3/status", nil, noBearer...)).Want(200), &st)
	var sess sdkLoginResponse
	c.made(api.JSON("POST", "/api/v3/user/refresh", sdkRefreshTokenRequest{RefreshToken: testTokens[role]}, noBearer...)).Want(200).Decode(&sess)
	c.as = bearer(sess.AccessToken)
	return c
}

// made notes r's request among the client's calls.
func (c sdkClient) made(r *testResponse) *testResponse {
	*c.calls = append(*c.calls, r.req)
	return r
}

// do is the SDK's doRequest: a JSON body (none for nil), and any status
// but 2xx an error (checkStatusCode), which fails the test.
func (c sdkClient) do(method, path string, request any, answer any) *testResponse {
	c.t.Helper()
	r := c.made(c.api.JSON(method, path, request, c.as...))
	if r.Status < 200 || r.Status > 299 {
		c.t.Fatalf("%s: the SDK fails on %d: %s", r.req, r.Status, r.Body)
	}
	if answer != nil {
		sdkDecode(c.t, r, answer)
	}
	return r
}

// upload is the SDK's doRequestWithHeaders of a multipart YAML file, as
// its *FromYAML methods send one.
func (c sdkClient) upload(method, path, field string, doc []byte, answer any) {
	c.t.Helper()
	r := c.made(c.api.Upload(method, path, field, string(doc), c.as...))
	if r.Status < 200 || r.Status > 299 {
		c.t.Fatalf("%s: the SDK fails on %d: %s", r.req, r.Status, r.Body)
	}
	if answer != nil {
		sdkDecode(c.t, r, answer)
	}
}

func (c sdkClient) ListAgents() (out sdkListAgentsResponse) {
	c.do("GET", "/api/v3/iofog-list", nil, &out)
	return out
}

func (c sdkClient) GetAgentByID(uuid string) (out sdkAgentInfo) {
	c.do("GET", "/api/v3/iofog/"+uuid, nil, &out)
	return out
}

// GetAgentByName is ListAgents, then the first of that name.
func (c sdkClient) GetAgentByName(name string) *sdkAgentInfo {
	for _, a := range c.ListAgents().Agents {
		if a.Name == name {
			return &a
		}
	}
	return nil
}

func (c sdkClient) UpdateAgent(req sdkAgentUpdateRequest) sdkAgentInfo {
	c.do("PATCH", "/api/v3/iofog/"+req.UUID, req, nil)
	return c.GetAgentByID(req.UUID)
}

func (c sdkClient) DeleteAgent(uuid string) { c.do("DELETE", "/api/v3/iofog/"+uuid, nil, nil) }

func (c sdkClient) GetAllMicroservices() (out sdkMicroserviceListResponse) {
	c.do("GET", "/api/v3/microservices", nil, &out)
	return out
}

func (c sdkClient) GetMicroservicesByApplication(app string) (out sdkMicroserviceListResponse) {
	c.do("GET", "/api/v3/microservices?application="+app, nil, &out)
	return out
}

func (c sdkClient) GetMicroserviceByID(uuid string) (out sdkMicroserviceInfo) {
	c.do("GET", "/api/v3/microservices/"+uuid, nil, &out)
	return out
}

// GetMicroserviceByName is GetMicroservicesByApplication, then the one of
// that name.
func (c sdkClient) GetMicroserviceByName(app, name string) sdkMicroserviceInfo {
	for _, m := range c.GetMicroservicesByApplication(app).Microservices {
		if m.Name == name {
			return m
		}
	}
	c.t.Fatalf("the SDK finds no microservice %s/%s", app, name)
	return sdkMicroserviceInfo{}
}

func (c sdkClient) CreateMicroserviceFromYAML(doc []byte) sdkMicroserviceInfo {
	var created sdkMicroserviceCreateResponse
	c.upload("POST", "/api/v3/microservices/yaml", "microservice", doc, &created)
	return c.GetMicroserviceByID(created.UUID)
}

func (c sdkClient) UpdateMicroserviceFromYAML(uuid string, doc []byte) sdkMicroserviceInfo {
	c.upload("PATCH", "/api/v3/microservices/yaml/"+uuid, "microservice", doc, nil)
	return c.GetMicroserviceByID(uuid)
}

func (c sdkClient) DeleteMicroservice(uuid string) {
	c.do("DELETE", "/api/v3/microservices/"+uuid, nil, nil)
}

func (c sdkClient) GetAllApplications() (out sdkApplicationListResponse) {
	c.do("GET", "/api/v3/application", nil, &out)
	return out
}

func (c sdkClient) GetAllSystemApplications() (out sdkApplicationListResponse) {
	c.do("GET", "/api/v3/application/system", nil, &out)
	return out
}

func (c sdkClient) GetAllSystemMicroservices() (out sdkMicroserviceListResponse) {
	c.do("GET", "/api/v3/microservices/system", nil, &out)
	return out
}

func (c sdkClient) ListRoutes() (out sdkRouteListResponse) {
	c.do("GET", "/api/v3/routes", nil, &out)
	return out
}

// ListVolumeMounts and ListServices read {"<kind>": [...]}, else an array.
func (c sdkClient) ListVolumeMounts() (out sdkVolumeMountListResponse) {
	c.do("GET", "/api/v3/volumeMounts", nil, &out)
	return out
}

func (c sdkClient) ListServices() (out []sdkServiceInfo) {
	r := c.do("GET", "/api/v3/services", nil, nil)
	var wrapped struct {
		Services []sdkServiceInfo `json:"services"`
	}
	if json.Unmarshal(r.Body, &wrapped) == nil {
		return wrapped.Services
	}
	sdkDecode(c.t, r, &out)
	return out
}

// IsEdgeResourceCapable is HEAD /capabilities/edgeResources: a 404 is
// "not supported", which potctl's get all takes as no edge resources.
func (c sdkClient) IsEdgeResourceCapable() bool {
	r := c.made(c.api.Do("HEAD", "/api/v3/capabilities/edgeResources", nil, c.as...))
	if r.Status != 404 && (r.Status < 200 || r.Status > 299) {
		c.t.Fatalf("%s: %d, which fails potctl's get all", r.req, r.Status)
	}
	return r.Status != 404
}

// potctlDescribeAgentConfig is potctl describe agent-config
// (clientutil.GetAgentConfig): the agent by name, every field it reads
// into an AgentConfig, upstream routers by name, and the tags.
func potctlDescribeAgentConfig(c sdkClient, name string) (potctlAgentConfig, *[]string) {
	c.t.Helper()
	a := c.GetAgentByName(name)
	if a == nil {
		c.t.Fatalf("describe agent-config: no agent %s", name)
	}
	byUUID := map[string]string{}
	for _, o := range c.ListAgents().Agents {
		byUUID[o.UUID] = o.Name
	}
	var upstream *[]string
	if a.UpstreamRouters != nil {
		names := []string{}
		for _, u := range *a.UpstreamRouters {
			if n, ok := byUUID[u]; ok {
				u = n
			}
			names = append(names, u)
		}
		upstream = &names
	}
	fogType := "auto"
	conf := potctlAgentConfig{Name: a.Name, Location: a.Location, Latitude: a.Latitude, Longitude: a.Longitude, Description: a.Description, FogType: &fogType,
		sdkAgentConfiguration: sdkAgentConfiguration{NetworkInterface: &a.NetworkInterface, DockerURL: &a.DockerURL, ContainerEngine: &a.ContainerEngine,
			DeploymentType: &a.DeploymentType, DiskLimit: &a.DiskLimit, DiskDirectory: &a.DiskDirectory, MemoryLimit: &a.MemoryLimit, CPULimit: &a.CPULimit,
			LogLimit: &a.LogLimit, LogDirectory: &a.LogDirectory, LogFileCount: &a.LogFileCount, StatusFrequency: &a.StatusFrequency,
			ChangeFrequency: &a.ChangeFrequency, DeviceScanFrequency: &a.DeviceScanFrequency, BluetoothEnabled: &a.BluetoothEnabled,
			WatchdogEnabled: &a.WatchdogEnabled, GpsMode: &a.GpsMode, GpsScanFrequency: &a.GpsScanFrequency, GpsDevice: &a.GpsDevice,
			EdgeGuardFrequency: &a.EdgeGuardFrequency, AbstractedHardwareEnabled: &a.AbstractedHardwareEnabled, LogLevel: a.LogLevel,
			DockerPruningFrequency: a.DockerPruningFrequency, AvailableDiskThreshold: a.AvailableDiskThreshold, UpstreamRouters: upstream,
			sdkRouterConfig: sdkRouterConfig{RouterMode: &a.RouterMode, MessagingPort: a.MessagingPort, EdgeRouterPort: a.EdgeRouterPort,
				InterRouterPort: a.InterRouterPort}, TimeZone: a.TimeZone}}
	return conf, a.Tags
}

// potctlDeployAgentConfig is potctl deploy of an AgentConfig of an agent
// that exists (deployagentconfig: RemoteExecutor.Execute, Process,
// updateAgentConfiguration): the agent by name, every agent for the
// upstream routers' uuids (default-router stays), the host from the
// agent's external address when the document names none and the agent
// has a router, then the update.
func potctlDeployAgentConfig(c sdkClient, conf potctlAgentConfig, tags *[]string) sdkAgentInfo {
	c.t.Helper()
	agent := c.GetAgentByName(conf.Name)
	if agent == nil {
		c.t.Fatalf("deploy AgentConfig: no agent %s", conf.Name)
	}
	all := c.ListAgents().Agents
	if conf.UpstreamRouters != nil {
		uuids := []string{}
		for _, name := range *conf.UpstreamRouters {
			uuid := name
			if name != defaultRouterName {
				i := slices.IndexFunc(all, func(a sdkAgentInfo) bool { return a.Name == name })
				if i < 0 {
					c.t.Fatalf("deploy AgentConfig: potctl finds no router %s", name)
				}
				uuid = all[i].UUID
			}
			uuids = append(uuids, uuid)
		}
		conf.UpstreamRouters = &uuids
	}
	if (conf.RouterMode == nil || *conf.RouterMode != "none") && conf.Host == nil {
		conf.Host = &agent.IPAddressExternal
	}
	var fogType *int64
	if conf.FogType != nil {
		zero := int64(0) // auto
		fogType = &zero
	}
	return c.UpdateAgent(sdkAgentUpdateRequest{UUID: agent.UUID, Name: conf.Name, Location: conf.Location, Latitude: conf.Latitude,
		Longitude: conf.Longitude, Description: conf.Description, FogType: fogType, Tags: tags, sdkAgentConfiguration: conf.sdkAgentConfiguration})
}

// potctlDocument is the document the SDK uploads for a microservice
// (apps: IofogHeader of kind Microservice, yaml.Marshal).
func potctlDocument(t *testing.T, app, name string, spec any) []byte {
	t.Helper()
	h := sdkIofogHeader{APIVersion: "datasance.com/v3", Kind: "Microservice", Spec: spec}
	h.Metadata.Name = app + "/" + name
	b, err := yaml.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// potctlDeployMicroservice is potctl deploy of a kind: Microservice
// document (apps.DeployMicroservice): the application's microservices
// (microserviceExecutor.init, GetMicroservicesByApplication: any answer
// but 2xx fails the deploy), then an update of the one of that name, else
// a create. It reads no application and creates none.
func potctlDeployMicroservice(c sdkClient, app, name string, spec map[string]any) sdkMicroserviceInfo {
	c.t.Helper()
	doc := potctlDocument(c.t, app, name, spec)
	for _, m := range c.GetMicroservicesByApplication(app).Microservices {
		if m.Name == name {
			return c.UpdateMicroserviceFromYAML(m.UUID, doc)
		}
	}
	return c.CreateMicroserviceFromYAML(doc)
}

// potctlMoveMicroservice is potctl move microservice app/name agent
// (movemicroservice.Execute): the microservice and the agent by name, the
// microservice as a deploy document (its agent by uuid), the new agent in
// it, then the update.
func potctlMoveMicroservice(c sdkClient, app, name, agent string) sdkMicroserviceInfo {
	c.t.Helper()
	c.ListAgents() // SyncAgentInfo
	m := c.GetMicroserviceByName(app, name)
	dest := c.GetAgentByName(agent)
	if dest == nil {
		c.t.Fatalf("move: no agent %s", agent)
	}
	m.AgentUUID = dest.UUID
	var spec sdkAppsMicroservice
	spec.UUID, spec.Name, spec.Application = m.UUID, m.Name, &m.Application
	spec.Agent.Name, spec.Agent.Config = c.GetAgentByID(m.AgentUUID).Name, map[string]any{}
	spec.Images = &struct {
		CatalogID int    `yaml:"catalogId"`
		X86       string `yaml:"x86"`
		ARM       string `yaml:"arm"`
		Registry  string `yaml:"registry"`
	}{}
	spec.Container.Volumes, spec.Container.Env, spec.Container.ExtraHosts = &[]map[string]any{}, &[]map[string]any{}, &[]map[string]any{}
	spec.Container.RootHostAccess, spec.Container.Runtime, spec.Container.Platform = m.RootHostAccess, m.Runtime, m.Platform
	if err := json.Unmarshal([]byte(m.Config), &spec.Config); err != nil {
		c.t.Fatalf("move: the microservice's config %q: %v", m.Config, err)
	}
	return c.UpdateMicroserviceFromYAML(m.UUID, potctlDocument(c.t, m.Application, m.Name, spec))
}

// potctlDeleteAgent is potctl delete agent (deleteagent.Execute): the
// agents, a refusal while a microservice runs on it, then the delete.
func potctlDeleteAgent(c sdkClient, name string) {
	c.t.Helper()
	a := c.GetAgentByName(name)
	if a == nil {
		c.t.Fatalf("delete agent: no agent %s", name)
	}
	for _, m := range c.GetAllMicroservices().Microservices {
		if m.AgentUUID == a.UUID {
			c.t.Fatalf("delete agent: potctl refuses, microservice %s runs on %s", m.Name, name)
		}
	}
	c.DeleteAgent(a.UUID)
}

// potctlApplicationTable is the table of potctl get applications (and get
// all's, for system ones): per application its microservices, grouped by
// application id as potctl groups them.
func potctlApplicationTable(c sdkClient, system bool) map[string][]string {
	c.t.Helper()
	list := c.GetAllApplications
	if system {
		list = c.GetAllSystemApplications
	}
	apps := list()
	byID := map[int][]string{}
	for _, a := range apps.Applications {
		for _, m := range c.GetMicroservicesByApplication(a.Name).Microservices {
			byID[a.ID] = append(byID[a.ID], m.Name)
		}
	}
	table := map[string][]string{}
	for _, a := range apps.Applications {
		table[a.Name] = byID[a.ID]
	}
	return table
}

// TestPotctlContractWrites replays potctl's writes to agents and
// microservices on both stores: deploy of an AgentConfig (described, then
// deployed back with tags, as potctl users set an agent's tags), deploy of
// a microservice (create, then update, and a create into an application
// svcbridge has never seen), move, delete agent, delete microservice; each
// must leave what svcbridge's own API then reads.
func TestPotctlContractWrites(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, rec := newTestAPI(t, dialect)
		hub := createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		core := createAgent(t, api, map[string]any{"name": "core", "host": "core.example.com", "routerMode": "interior", "upstreamRouters": []string{"hub"}})
		createAgent(t, api, map[string]any{"name": "plant-a", "host": "plant-a.example.com", "upstreamRouters": []string{"hub"}})
		plantB := createAgent(t, api, map[string]any{"name": "plant-b", "upstreamRouters": []string{"hub"}})
		web := createMicroservice(t, api, map[string]any{"application": "shop", "name": "web", "agent": "plant-a"})
		c := newSDKClient(t, api, auth.SRE)

		// potctl deploy of an AgentConfig: describe agent-config's
		// document, with tags and a second upstream router.
		conf, tags := potctlDescribeAgentConfig(c, "plant-a")
		if tags == nil || len(*tags) != 0 || conf.UpstreamRouters == nil || !slices.Equal(*conf.UpstreamRouters, []string{"default-router"}) {
			t.Fatalf("describe agent-config: tags %v, upstream routers %v", tags, conf.UpstreamRouters)
		}
		*conf.UpstreamRouters = append(*conf.UpstreamRouters, "core")
		info := potctlDeployAgentConfig(c, conf, &[]string{"service.iofog.org/tag: shop", "zone-a"})
		if info.Tags == nil || !slices.Equal(*info.Tags, []string{"service.iofog.org/tag: shop", "zone-a"}) {
			t.Fatalf("the SDK reads back tags %v", info.Tags)
		}
		var a inventory.Agent
		api.Do("GET", "/api/v3/agents/plant-a", nil).Want(200).Decode(&a)
		if !slices.Equal(a.Tags, []string{"service.iofog.org/tag: shop", "zone-a"}) || !slices.Equal(a.UpstreamRouters, []string{hub.UUID, core.UUID}) ||
			a.Host != "plant-a.example.com" || a.RouterMode != "edge" || a.DefaultRouter {
			t.Fatalf("plant-a after the AgentConfig, as svcbridge reads it: %+v", a)
		}
		// A hostless agent keeps no host, and the system agent stays the
		// default router.
		conf, _ = potctlDescribeAgentConfig(c, "plant-b")
		potctlDeployAgentConfig(c, conf, &[]string{"zone-b"})
		conf, _ = potctlDescribeAgentConfig(c, "hub")
		potctlDeployAgentConfig(c, conf, nil)
		api.Do("GET", "/api/v3/agents/plant-b", nil).Want(200).Decode(&a)
		if a.Host != "" || !slices.Equal(a.Tags, []string{"zone-b"}) {
			t.Fatalf("plant-b after the AgentConfig: %+v", a)
		}
		api.Do("GET", "/api/v3/agents/hub", nil).Want(200).Decode(&a)
		if !a.DefaultRouter || a.Host != "hub.example.com" || a.RouterMode != "interior" {
			t.Fatalf("hub after the AgentConfig: %+v", a)
		}

		// potctl deploy of a microservice into an application svcbridge
		// holds: a create, then an update with a new agent.
		spec := map[string]any{"agent": map[string]any{"name": "plant-a"}, "images": map[string]any{"x86": "shop/cart:1", "registry": "remote"},
			"container": map[string]any{"rootHostAccess": false, "ports": []any{map[string]any{"internal": 8080, "external": 18080}},
				"env": []any{map[string]any{"key": "MODE", "value": "prod"}}}, "config": map[string]any{"level": 3}}
		cart := potctlDeployMicroservice(c, "shop", "cart", spec)
		var m inventory.Microservice
		api.Do("GET", "/api/v3/microservices/"+cart.UUID, nil).Want(200).Decode(&m)
		if m.Application != "shop" || m.Name != "cart" || m.AgentUUID != uuidOfAgent(t, api, "plant-a") || m.HostNetworkMode {
			t.Fatalf("cart after the deploy, as svcbridge reads it: %+v", m)
		}
		spec["agent"] = map[string]any{"name": "plant-b"}
		spec["container"].(map[string]any)["hostNetworkMode"] = true
		if again := potctlDeployMicroservice(c, "shop", "cart", spec); again.UUID != cart.UUID || again.AgentUUID != plantB.UUID {
			t.Fatalf("the redeploy: %+v", again)
		}
		api.Do("GET", "/api/v3/microservices/"+cart.UUID, nil).Want(200).Decode(&m)
		if m.AgentUUID != plantB.UUID || !m.HostNetworkMode {
			t.Fatalf("cart after the redeploy: %+v", m)
		}

		// potctl deploy of a microservice into an application svcbridge
		// has never seen: its session, the application's microservices
		// (none, where the reference answers 404), the create, the
		// created microservice; the application then lists with it.
		for _, a := range c.GetAllApplications().Applications {
			if a.Name == "kiosk" {
				t.Fatalf("application kiosk before its first microservice: %+v", a)
			}
		}
		deployer := newSDKClient(t, api, auth.SRE)
		menu := potctlDeployMicroservice(deployer, "kiosk", "menu", map[string]any{"agent": map[string]any{"name": "core"},
			"images": map[string]any{"x86": "kiosk/menu:1", "registry": "remote"}, "container": map[string]any{"rootHostAccess": false, "ports": []any{}}})
		want := []string{"GET /api/v3/status", "POST /api/v3/user/refresh", "GET /api/v3/microservices?application=kiosk",
			"POST /api/v3/microservices/yaml", "GET /api/v3/microservices/" + menu.UUID}
		if !slices.Equal(*deployer.calls, want) {
			t.Fatalf("potctl's deploy into a new application made\n%q\nwant\n%q", *deployer.calls, want)
		}
		var kiosk wire.MicroserviceList
		api.Do("GET", "/api/v3/microservices?application=kiosk", nil).Want(200).Decode(&kiosk)
		if len(kiosk.Microservices) != 1 || kiosk.Microservices[0].UUID != menu.UUID || kiosk.Microservices[0].Name != "menu" ||
			kiosk.Microservices[0].Application != "kiosk" || kiosk.Microservices[0].Agent != core.UUID {
			t.Fatalf("application kiosk after the deploy, as svcbridge reads it: %+v", kiosk.Microservices)
		}
		if table := potctlApplicationTable(c, false); !slices.Equal(table["kiosk"], []string{"menu"}) {
			t.Fatalf("potctl get applications after the deploy: %v", table)
		}

		// potctl move microservice: the document of what GET answers,
		// with the new agent.
		rec.Reset()
		moved := potctlMoveMicroservice(c, "shop", "web", "core")
		api.Do("GET", "/api/v3/microservices/"+web.UUID, nil).Want(200).Decode(&m)
		if moved.AgentUUID != core.UUID || m.AgentUUID != core.UUID || m.Application != "shop" || m.Name != "web" {
			t.Fatalf("web after the move: SDK %+v, svcbridge %+v", moved, m)
		}
		if agents := rec.Agents(); !slices.Contains(agents, core.UUID) {
			t.Fatalf("the move queued agents %v, want the new one among them", agents)
		}

		// potctl delete agent: once nothing runs on it. (The move's
		// document has no hostNetworkMode: the move keeps it.)
		potctlMoveMicroservice(c, "shop", "cart", "plant-a")
		if api.Do("GET", "/api/v3/microservices/"+cart.UUID, nil).Want(200).Decode(&m); !m.HostNetworkMode || m.AgentUUID == plantB.UUID {
			t.Fatalf("cart after its move: %+v", m)
		}
		potctlDeleteAgent(c, "plant-b")
		api.Do("GET", "/api/v3/agents/plant-b", nil).WantError(404, "NotFoundError", "Agent plant-b not found")
		api.JSON("DELETE", "/api/v3/iofog/"+plantB.UUID, nil, c.as...).WantError(404, "NotFoundError", fmt.Sprintf("Invalid ioFog UUID '%s'", plantB.UUID))

		// potctl delete microservice: by name, then by uuid.
		c.DeleteMicroservice(c.GetMicroserviceByName("shop", "cart").UUID)
		api.Do("GET", "/api/v3/microservices/"+cart.UUID, nil).Want(404)
		// The application's last one: no microservice names kiosk, so
		// svcbridge holds no application kiosk any more.
		c.DeleteMicroservice(c.GetMicroserviceByName("kiosk", "menu").UUID)
		if left := c.GetMicroservicesByApplication("kiosk").Microservices; len(left) != 0 {
			t.Fatalf("application kiosk after its last microservice's delete: %+v", left)
		}
		if _, ok := potctlApplicationTable(c, false)["kiosk"]; ok {
			t.Fatal("potctl get applications lists kiosk after its last microservice's delete")
		}
	})
}

// uuidOfAgent is the uuid of the agent named name.
func uuidOfAgent(t *testing.T, api *testAPI, name string) string {
	t.Helper()
	var a inventory.Agent
	api.Do("GET", "/api/v3/agents/"+name, nil).Want(200).Decode(&a)
	return a.UUID
}

// TestPotctlContractLists replays potctl get applications, get
// system-microservices and get all on both stores: every call answers in
// the SDK's shapes, applications with their microservices, the kinds
// svcbridge holds none of empty.
func TestPotctlContractLists(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, _ := newTestAPI(t, dialect)
		c := newSDKClient(t, api, auth.Viewer)

		// Nothing held yet: empty lists, no 404.
		if table := potctlApplicationTable(c, false); len(table) != 0 {
			t.Fatalf("applications of an empty inventory: %v", table)
		}
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		createAgent(t, api, map[string]any{"name": "plant-a", "upstreamRouters": []string{"hub"}})
		for _, am := range []string{"shop/web", "shop/db", "billing/ledger"} {
			app, name, _ := strings.Cut(am, "/")
			createMicroservice(t, api, map[string]any{"application": app, "name": name, "agent": "plant-a"})
		}
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}).Want(201)

		// get applications: each with its own microservices.
		apps := c.GetAllApplications()
		var names []string
		for _, a := range apps.Applications {
			names = append(names, a.Name)
			if a.ID == 0 || a.ID != applicationID(a.Name) || !a.IsActivated || a.IsSystem || a.Description != "" || a.Routes == nil {
				t.Errorf("application %+v", a)
			}
		}
		if !slices.Equal(names, []string{"billing", "shop"}) || apps.Applications[0].ID == apps.Applications[1].ID {
			t.Fatalf("applications %v", apps.Applications)
		}
		if shop := apps.Applications[1].Microservices; len(shop) != 2 || shop[0].Name != "db" || shop[1].Name != "web" || shop[0].Application != "shop" {
			t.Fatalf("shop's microservices %+v", shop)
		}
		table := potctlApplicationTable(c, false)
		if !slices.Equal(table["shop"], []string{"db", "web"}) || !slices.Equal(table["billing"], []string{"ledger"}) {
			t.Fatalf("potctl get applications %v", table)
		}

		// get system-microservices: none, and the agents.
		if sys := c.GetAllSystemMicroservices(); sys.Microservices == nil || len(sys.Microservices) != 0 {
			t.Fatalf("system microservices %+v", sys)
		}
		c.ListAgents()
		api.Do("GET", "/api/v3/microservices/system?application=shop", nil, c.as...).WantError(404, "NotFoundError", "Invalid flow id shop")

		// get all: controllers (status), agents, edge resources when
		// capable, applications, system applications, routes, services,
		// volume mounts.
		var st sdkControllerStatus
		sdkDecode(t, api.Do("GET", "/api/v3/status", nil, noBearer...).Want(200), &st)
		if agents := c.ListAgents(); len(agents.Agents) != 2 {
			t.Fatalf("get all's agents %+v", agents)
		}
		if c.IsEdgeResourceCapable() {
			t.Fatal("svcbridge holds no edge resources, yet says it is capable")
		}
		if table := potctlApplicationTable(c, false); len(table) != 2 {
			t.Fatalf("get all's applications %v", table)
		}
		if table := potctlApplicationTable(c, true); len(table) != 0 {
			t.Fatalf("get all's system applications %v", table)
		}
		if routes := c.ListRoutes(); routes.Routes == nil || len(routes.Routes) != 0 {
			t.Fatalf("routes %+v", routes)
		}
		if svcs := c.ListServices(); len(svcs) != 1 || svcs[0].Name != "vendor" {
			t.Fatalf("services %+v", svcs)
		}
		if vms := c.ListVolumeMounts(); vms.VolumeMounts == nil || len(vms.VolumeMounts) != 0 {
			t.Fatalf("volume mounts %+v", vms)
		}
	})
}

// TestIofogWritesAreTheNativeWrites: the reference's routes refuse what
// svcbridge's own routes refuse, with the same status and message, warn
// of the same broken services, and dry-run as they do: the answer of the
// write, nothing stored, no reconcile.
func TestIofogWritesAreTheNativeWrites(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, _, rec := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		fogA := createAgent(t, api, map[string]any{"name": "fog-a", "host": "fog-a.example.com", "upstreamRouters": []string{"hub"}})
		createAgent(t, api, map[string]any{"name": "bare", "routerMode": "none"})
		checkout := createMicroservice(t, api, map[string]any{"application": "orders", "name": "checkout", "agent": "fog-a"})
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}).Want(201)
		api.JSON("POST", "/api/v3/services", map[string]any{"name": "ssh", "type": "agent", "resource": "fog-a", "targetPort": 22}).Want(201)
		rec.Reset()
		fog := "/api/v3/iofog/" + fogA.UUID
		doc := func(agent string) string {
			return "kind: Microservice\nmetadata:\n  name: orders/checkout\nspec:\n  agent:\n    name: " + agent + "\n"
		}

		// The same refusals.
		for _, change := range []map[string]any{
			{"routerMode": "hub"}, {"name": "hub"}, {"name": "Fog-A"}, {"host": "bad host"}, {"isSystem": true},
			{"upstreamRouters": []string{"nope"}}, {"upstreamRouters": []string{"bare"}}, {"tags": []string{"a", "a"}}, {"uuid": uuidOfAgent(t, api, "hub")},
		} {
			native := map[string]any{}
			for k, v := range change {
				if k == "isSystem" {
					k = "defaultRouter"
				}
				native[k] = v
			}
			want := api.JSON("PATCH", "/api/v3/agents/fog-a", native)
			got := api.JSON("PATCH", fog, change)
			if want.Status < 400 || got.Status != want.Status || string(got.Body) != string(want.Body) {
				t.Errorf("%v: the reference's route %d %s, the native %d %s", change, got.Status, got.Body, want.Status, want.Body)
			}
		}
		api.JSON("PATCH", fog, map[string]any{"diskLimit": 1.5}).WantError(400, "ValidationError", "Field 'diskLimit' is not of a type(s) integer")
		api.JSON("PATCH", fog, map[string]any{"location": nil}).WantError(400, "ValidationError", "Field 'location' is not of a type(s) string")
		api.JSON("PATCH", fog, map[string]any{"colour": "red"}).WantError(400, "ValidationError", "Unknown field 'colour'")
		api.JSON("PATCH", "/api/v3/iofog/fog-a", map[string]any{}).WantError(404, "NotFoundError", "Invalid ioFog UUID 'fog-a'")
		for _, doc := range []string{doc("nope"), "kind: Microservice\nmetadata:\n  name: orders/Checkout\nspec:\n  agent:\n    name: fog-a\n"} {
			if r := api.Upload("PATCH", "/api/v3/microservices/yaml/"+checkout.UUID, "microservice", doc); r.Status != 400 {
				t.Errorf("YAML update %q: %d %s", doc, r.Status, r.Body)
			}
		}
		api.Upload("POST", "/api/v3/microservices/yaml", "microservice", "kind: Microservice\nmetadata:\n  name: orders/cart\nspec: {}\n").
			WantError(400, "ValidationError", "Required field 'agent' is missing")
		api.Upload("POST", "/api/v3/microservices/yaml", "microservice", doc("fog-a")).
			WantError(409, "DuplicatePropertyError", "Microservice with name checkout already exists in application orders")
		api.JSON("DELETE", fog, nil).WantError(409, "ConflictError", api.JSON("DELETE", "/api/v3/agents/fog-a", nil).Map()["message"].(string))
		if n := rec.Calls(); n != 0 {
			t.Fatalf("refused writes started %d reconciles", n)
		}

		// The same warnings, and a dry run stores nothing.
		before := api.Do("GET", fog, nil).Want(200).Map()
		native := api.JSON("PATCH", "/api/v3/agents/fog-a?dryRun=true", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}).Want(200)
		dry := api.JSON("PATCH", fog+"?dryRun=true", map[string]any{"routerMode": "none", "upstreamRouters": []string{}}).Want(200)
		var would wire.Fog
		dry.Decode(&would)
		if w := dry.Header.Values("Warning"); len(w) != 2 || !slices.Equal(w, native.Header.Values("Warning")) || dry.Header.Get(DryRunHeader) != "true" ||
			would.RouterMode != "none" || would.UpstreamRouters != nil {
			t.Fatalf("dry-run PATCH: warnings %q (native %q), answer %+v", w, native.Header.Values("Warning"), would)
		}
		if after := api.Do("GET", fog, nil).Want(200).Map(); !equalJSON(after, before) {
			t.Fatalf("a dry run changed the agent: %v", after)
		}
		api.JSON("DELETE", "/api/v3/iofog/"+uuidOfAgent(t, api, "bare")+"?dryRun=true", nil).Want(202)
		api.Do("GET", "/api/v3/agents/bare", nil).Want(200)
		var created wire.MicroserviceCreated
		api.Upload("POST", "/api/v3/microservices/yaml?dryRun=true", "microservice", strings.Replace(doc("fog-a"), "checkout", "cart", 1)).Want(201).Decode(&created)
		api.Do("GET", "/api/v3/microservices/"+created.UUID, nil).Want(404)
		moveDry := api.Upload("PATCH", "/api/v3/microservices/yaml/"+checkout.UUID+"?dryRun=true", "microservice", doc("bare")).Want(200)
		want := []string{`299 - "service checkout would fail: Agent bare has routerMode none: a TCP bridge service requires a router on the agent"`}
		if w := moveDry.Header.Values("Warning"); !slices.Equal(w, want) {
			t.Fatalf("dry-run move warned %q, want %q", w, want)
		}
		var m inventory.Microservice
		if api.Do("GET", "/api/v3/microservices/"+checkout.UUID, nil).Want(200).Decode(&m); m.AgentUUID != fogA.UUID {
			t.Fatalf("a dry-run move moved it: %+v", m)
		}
		if n := rec.Calls(); n != 0 {
			t.Fatalf("dry runs started %d reconciles", n)
		}

		// The real move warns as the native move does.
		moved := api.Upload("PATCH", "/api/v3/microservices/yaml/"+checkout.UUID, "microservice", doc("bare")).Want(204)
		if w := moved.Header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], "service checkout will fail") {
			t.Fatalf("the move warned %q", w)
		}
	})
}

// TestMicroserviceMovesByIofogUUID: the native PATCH reads the reference's
// iofogUuid as the agent when agent is absent (a reference client's move);
// agent wins when both are sent.
func TestMicroserviceMovesByIofogUUID(t *testing.T) {
	api, _, _ := newTestAPI(t, "sqlite")
	createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	fogA := createAgent(t, api, map[string]any{"name": "fog-a", "upstreamRouters": []string{"hub"}})
	fogB := createAgent(t, api, map[string]any{"name": "fog-b", "upstreamRouters": []string{"hub"}})
	m := createMicroservice(t, api, map[string]any{"application": "orders", "name": "checkout", "agent": "fog-a"})
	var got inventory.Microservice
	api.JSON("PATCH", "/api/v3/microservices/"+m.UUID, map[string]any{"iofogUuid": fogB.UUID}).Want(200).Decode(&got)
	if got.AgentUUID != fogB.UUID {
		t.Fatalf("moved by iofogUuid to %s, want fog-b", got.AgentUUID)
	}
	api.JSON("PATCH", "/api/v3/microservices/"+m.UUID, map[string]any{"agent": "fog-a", "iofogUuid": fogB.UUID}).Want(200).Decode(&got)
	if got.AgentUUID != fogA.UUID {
		t.Fatalf("agent and iofogUuid: moved to %s, want agent's fog-a", got.AgentUUID)
	}
	api.JSON("PATCH", "/api/v3/microservices/"+m.UUID, map[string]any{"iofogUuid": "nope"}).WantError(400, "ValidationError", "Invalid agent 'nope'")
	api.JSON("POST", "/api/v3/microservices", map[string]any{"application": "orders", "name": "cart", "iofogUuid": fogB.UUID}).Want(201).Decode(&got)
	if got.AgentUUID != fogB.UUID {
		t.Fatalf("created by iofogUuid on %s, want fog-b", got.AgentUUID)
	}
}

// TestApplicationID: stable, in range, and different for different names
// (for these).
func TestApplicationID(t *testing.T) {
	seen := map[int]string{}
	for _, name := range []string{"", "a", "b", "shop", "billing", "orders", strings.Repeat("x", 63)} {
		id := applicationID(name)
		if id < 1 || id > 1<<31-1 || id != applicationID(name) {
			t.Errorf("%q: %d", name, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %q share id %d", name, other, id)
		}
		seen[id] = name
	}
}
