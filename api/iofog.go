package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/wire"
)

// iofogRoutes are the ioFog controller's routes that potctl and the ioFog
// Go SDK call beside svcbridge's own (get agents, describe agent, deploy of
// an AgentConfig, delete agent, deploy and move of a microservice, get
// applications, get system-microservices, get all), in the reference
// controller's shapes, mapped onto svcbridge's agents and microservices
// with the rules, warnings and dry runs of svcbridge's own routes. The
// kinds svcbridge holds none of that potctl lists beside them answer an
// empty list, so that a command listing several kinds does not fail.
func (s *Server) iofogRoutes(g *gin.RouterGroup) {
	g.GET("/iofog-list", s.listFogs)
	g.GET("/iofog/:uuid", s.getFog)
	g.PATCH("/iofog/:uuid", s.patchFog)
	g.DELETE("/iofog/:uuid", noBody, s.deleteFog)
	g.POST("/microservices/yaml", s.createMicroserviceYAML)
	g.PATCH("/microservices/yaml/:uuid", s.updateMicroserviceYAML)
	g.GET("/microservices/system", s.listSystemMicroservices)
	g.GET("/application", s.listApplications)
	g.GET("/application/system", holdsNone(wire.ApplicationList{Applications: []wire.Application{}}))
	g.GET("/routes", holdsNone(wire.RouteList{Routes: []struct{}{}}))
	g.GET("/volumeMounts", holdsNone(wire.VolumeMountList{VolumeMounts: []struct{}{}}))
}

// defaultRouterName is how the reference controller names the default
// router among an agent's upstream routers.
const defaultRouterName = "default-router"

// iofogTime is how the reference controller's answers write a timestamp.
func iofogTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// iofogAgent is a as the reference controller answers an agent: the
// fields svcbridge holds where the reference keeps them (the default
// router's agent is its system agent; the default router, among upstream
// routers, is "default-router"; the host is also the external address,
// which potctl sends back as the host of an AgentConfig that names none),
// every other field as the reference answers one never set. defaultRouter
// is the default router's agent uuid, "" when there is none.
func iofogAgent(a inventory.Agent, defaultRouter string) wire.Fog {
	f := wire.Fog{
		UUID: a.UUID, Name: a.Name, Host: a.Host, IsSystem: a.DefaultRouter, RouterMode: a.RouterMode,
		Tags: a.Tags, CreatedAt: iofogTime(a.CreatedAt), UpdatedAt: iofogTime(a.UpdatedAt), IPAddressExternal: a.Host,

		DaemonStatus: "NOT_PROVISIONED", IPAddress: "0.0.0.0",
		NetworkInterface: "dynamic", DockerURL: "unix:///var/run/docker.sock", ContainerEngine: "docker",
		DeploymentType: "native", DiskLimit: 50, DiskDirectory: "/var/lib/iofog/", MemoryLimit: 4096,
		CPULimit: 80, LogLimit: 10, LogDirectory: "/var/log/iofog/", LogFileCount: 10, LogLevel: "INFO",
		StatusFrequency: 10, ChangeFrequency: 20, DeviceScanFrequency: 20, GpsScanFrequency: 60,
		AvailableDiskThreshold: 20, IsReadyToUpgrade: true, SecurityStatus: "OK",
		SecurityViolationInfo: "No violation", WarningMessage: "HEALTHY", VolumeMounts: []struct{}{},
	}
	if f.Tags == nil {
		f.Tags = []string{}
	}
	if a.HasRouter() {
		f.UpstreamRouters = make([]string, len(a.UpstreamRouters))
		for i, u := range a.UpstreamRouters {
			if u == defaultRouter {
				u = defaultRouterName
			}
			f.UpstreamRouters[i] = u
		}
	}
	return f
}

// iofogMicroservice is the reference controller's part of a microservice
// answer (see wire.IofogMicroservice): the agent under its name there,
// every other field as the reference answers one never set.
func iofogMicroservice(m inventory.Microservice) wire.IofogMicroservice {
	return wire.IofogMicroservice{
		AgentUUID: m.AgentUUID, Config: "{}", Annotations: "{}", IsActivated: true, Schedule: 50,
		Ports: []struct{}{}, VolumeMappings: []struct{}{}, Routes: []string{}, Env: []struct{}{},
		Cmd: []string{}, CdiDevices: []string{}, CapAdd: []string{}, CapDrop: []string{},
		ExtraHosts: []struct{}{}, Images: []struct{}{}, PubTags: []string{}, SubTags: []string{},
	}
}

// fogFilter is one of GET /iofog-list's filters: filters[i][key],
// filters[i][value] and filters[i][condition] in the query.
type fogFilter struct {
	Key, Value, Condition string
}

// maxFogFilters is as many filters as the reference reads as a list (qs's
// arrayLimit); it bounds the work of one request.
const maxFogFilters = 20

var fogFilterParam = regexp.MustCompile(`^filters\[(\d+)\]\[(key|value|condition)\]$`)

// parseFogFilters reads the filters of q, in the order of their index.
// Each needs a key, a value and a condition (equals or has); the SDK's
// system is left alone, as the reference leaves what it does not hold
// (checkParams has refused any other parameter).
func parseFogFilters(q url.Values) ([]fogFilter, error) {
	byIndex := map[int]*fogFilter{}
	// In the names' order, so that a refusal names the same parameter
	// every time.
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !strings.HasPrefix(name, "filters") {
			continue
		}
		values := q[name]
		m := fogFilterParam.FindStringSubmatch(name)
		if m == nil {
			return nil, badRequest("Query parameter '%s' is not filters[N][key|value|condition]", name)
		}
		i, err := strconv.Atoi(m[1])
		if err != nil || i >= maxFogFilters {
			return nil, badRequest("Query parameter '%s': at most %d filters, numbered from 0", name, maxFogFilters)
		}
		if len(values) != 1 {
			return nil, badRequest("Query parameter '%s' is given %d times", name, len(values))
		}
		f := byIndex[i]
		if f == nil {
			f = &fogFilter{}
			byIndex[i] = f
		}
		switch m[2] {
		case "key":
			f.Key = values[0]
		case "value":
			f.Value = values[0]
		case "condition":
			f.Condition = values[0]
		}
	}
	indices := make([]int, 0, len(byIndex))
	for i := range byIndex {
		indices = append(indices, i)
	}
	slices.Sort(indices)
	out := make([]fogFilter, 0, len(indices))
	for _, i := range indices {
		f := *byIndex[i]
		switch {
		case f.Key == "":
			return nil, badRequest("Filter %d has no key", i)
		case f.Condition != "equals" && f.Condition != "has":
			return nil, badRequest("Filter %d: condition must be equals or has", i)
		}
		out = append(out, f)
	}
	return out, nil
}

// fogMatches reports whether every filter matches the answered field it
// names: equals, a field whose value (a string, or a number's or a
// boolean's JSON text) is the filter's; has, a string field that contains
// the value or a list field (tags, upstreamRouters) holding it. An absent
// or null field matches nothing.
func fogMatches(f wire.Fog, filters []fogFilter) bool {
	if len(filters) == 0 {
		return true
	}
	b, _ := json.Marshal(f) // strings, numbers and lists: cannot fail
	var fields map[string]any
	json.Unmarshal(b, &fields)
	for _, flt := range filters {
		if !fieldMatches(fields[flt.Key], flt) {
			return false
		}
	}
	return true
}

func fieldMatches(v any, f fogFilter) bool {
	switch v := v.(type) {
	case string:
		if f.Condition == "has" {
			return strings.Contains(v, f.Value)
		}
		return v == f.Value
	case float64, bool:
		return f.Condition == "equals" && fmt.Sprint(v) == f.Value
	case []any:
		return f.Condition == "has" && slices.Contains(v, any(f.Value))
	}
	return false
}

// defaultRouterUUID is the default router's agent uuid, "" when there is
// none.
func defaultRouterUUID(ctx context.Context, tx *store.Tx) (string, error) {
	a, err := tx.DefaultRouter(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return a.UUID, err
}

func (s *Server) listFogs(c *gin.Context) {
	filters, err := parseFogFilters(c.Request.URL.Query())
	if err != nil {
		fail(c, err)
		return
	}
	fogs, ok := read(s, c, func(tx *store.Tx, ctx context.Context) ([]wire.Fog, error) {
		agents, err := tx.ListAgents(ctx)
		if err != nil {
			return nil, err
		}
		var defaultRouter string
		for _, a := range agents {
			if a.DefaultRouter {
				defaultRouter = a.UUID
			}
		}
		fogs := []wire.Fog{}
		for _, a := range agents {
			if f := iofogAgent(a, defaultRouter); fogMatches(f, filters) {
				fogs = append(fogs, f)
			}
		}
		return fogs, nil
	})
	if ok {
		c.JSON(http.StatusOK, wire.FogList{Fogs: fogs})
	}
}

// findFog finds an agent as the reference's /iofog/{uuid} routes do: by
// uuid only.
func findFog(ctx context.Context, tx *store.Tx, id string) (inventory.Agent, error) {
	a, err := tx.AgentByUUID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return a, fogNotFound(id)
	}
	return a, err
}

func fogNotFound(id string) *Error { return notFound("Invalid ioFog UUID '%s'", id) }

// fogView is a as GET /iofog/{uuid} answers it.
func fogView(ctx context.Context, tx *store.Tx, a inventory.Agent) (wire.Fog, error) {
	defaultRouter, err := defaultRouterUUID(ctx, tx)
	return iofogAgent(a, defaultRouter), err
}

func (s *Server) getFog(c *gin.Context) {
	id := c.Param("uuid")
	f, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (wire.Fog, error) {
		a, err := findFog(ctx, tx, id)
		if err != nil {
			return wire.Fog{}, err
		}
		return fogView(ctx, tx, a)
	})
	if ok {
		c.JSON(http.StatusOK, f)
	}
}

// patchFog is the reference's agent update (potctl's deploy of an
// AgentConfig, which sets the agent's tags) as svcbridge's partial update
// of the agent (changeAgent): name, host, routerMode, tags,
// upstreamRouters (uuids, default-router for the default router) and
// isSystem (the default router, as GET answers it); the reference's other
// fields are type-checked and ignored.
func (s *Server) patchFog(c *gin.Context) {
	in, ok := jsonDocument(c, inventory.DecodeIofogAgentJSON)
	if !ok {
		return
	}
	id := c.Param("uuid")
	find := func(ctx context.Context, tx *store.Tx, in *inventory.AgentInput) (inventory.Agent, error) {
		a, err := findFog(ctx, tx, id)
		if err != nil || in.UpstreamRouters == nil {
			return a, err
		}
		defaultRouter, err := defaultRouterUUID(ctx, tx)
		if defaultRouter != "" {
			for i, ref := range *in.UpstreamRouters {
				if ref == defaultRouterName {
					(*in.UpstreamRouters)[i] = defaultRouter
				}
			}
		}
		return a, err
	}
	if fog, ok := changeAgent(s, c, find, in, fogView); ok {
		answerUpdate(c, fog)
	}
}

// answerUpdate answers an update of the reference's routes: 204, as the
// reference; a dry run answers 200 with v, what the write would make (as a
// service's dry-run PATCH does).
func answerUpdate(c *gin.Context, v any) {
	if isDryRun(c.Request.Context()) {
		c.JSON(http.StatusOK, v)
		return
	}
	c.Status(http.StatusNoContent)
}

// deleteFog is potctl's delete agent: svcbridge's delete of the agent
// (removeAgent), answered 202 as the reference answers.
func (s *Server) deleteFog(c *gin.Context) {
	id := c.Param("uuid")
	find := func(ctx context.Context, tx *store.Tx) (inventory.Agent, error) { return findFog(ctx, tx, id) }
	if s.removeAgent(c, find, fogNotFound(id)) {
		c.Status(http.StatusAccepted)
	}
}

// createMicroserviceYAML is the reference's microservice create from a
// kind: Microservice document (potctl's deploy of a microservice the
// application does not hold yet) as svcbridge's create (addMicroservice),
// answered 201 {"uuid"} as the reference answers.
func (s *Server) createMicroserviceYAML(c *gin.Context) {
	in, ok := yamlUpload(c, "microservice", inventory.DecodeMicroserviceYAML)
	if !ok {
		return
	}
	if out, ok := s.addMicroservice(c, in); ok {
		c.JSON(http.StatusCreated, wire.MicroserviceCreated{UUID: out.UUID})
	}
}

// updateMicroserviceYAML is the reference's microservice update from a
// kind: Microservice document (potctl's deploy of a microservice that
// exists, and its move to another agent) as svcbridge's update
// (changeMicroservice).
func (s *Server) updateMicroserviceYAML(c *gin.Context) {
	in, ok := yamlUpload(c, "microservice", inventory.DecodeMicroserviceYAML)
	if !ok {
		return
	}
	if out, ok := s.changeMicroservice(c, in); ok {
		answerUpdate(c, out)
	}
}

// listSystemMicroservices answers the reference's system microservices
// (the routers and NATS servers it runs on agents), of which svcbridge runs
// none: an empty list, and for ?application= the reference's 404 of a
// system application it does not hold.
func (s *Server) listSystemMicroservices(c *gin.Context) {
	if app, ok := c.GetQuery("application"); ok {
		fail(c, notFound("Invalid flow id %s", app))
		return
	}
	c.JSON(http.StatusOK, wire.MicroserviceList{Microservices: []wire.Microservice{}})
}

// listApplications answers the reference's applications: the distinct
// applications of svcbridge's microservices, each with its microservices,
// by name.
func (s *Server) listApplications(c *gin.Context) {
	apps, ok := read(s, c, func(tx *store.Tx, ctx context.Context) ([]wire.Application, error) {
		ms, err := tx.ListMicroservices(ctx)
		if err != nil {
			return nil, err
		}
		var refs nameRefs
		for _, m := range ms {
			refs.microservice(m)
		}
		n, err := readNames(ctx, tx, refs)
		return applications(ms, n), err
	})
	if ok {
		c.JSON(http.StatusOK, wire.ApplicationList{Applications: apps})
	}
}

// applications are the applications of ms (sorted by application, as the
// store lists them) in the reference's shape, their microservices' agents
// named by n.
func applications(ms []inventory.Microservice, n names) []wire.Application {
	out := []wire.Application{}
	for _, m := range ms {
		if len(out) == 0 || out[len(out)-1].Name != m.Application {
			out = append(out, wire.Application{ID: applicationID(m.Application), Name: m.Application, IsActivated: true,
				Microservices: []wire.Microservice{}, Routes: []struct{}{}})
		}
		app := &out[len(out)-1]
		app.Microservices = append(app.Microservices, microserviceAnswer(m, n))
	}
	return out
}

// applicationID is the reference's numeric id of an application, which
// svcbridge names only: a number from 1 to 2^31-1 derived from the name
// (FNV-1a), the same in every answer, so that clients that group
// microservices by it (potctl get applications) tell applications apart.
func applicationID(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%math.MaxInt32) + 1
}

// holdsNone answers the list of a kind svcbridge holds none of in the
// reference's shape, empty.
func holdsNone(empty any) gin.HandlerFunc {
	return func(c *gin.Context) { c.JSON(http.StatusOK, empty) }
}
