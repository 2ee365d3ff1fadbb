package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// iofogRoutes are the ioFog controller's agent reads that potctl and the
// ioFog Go SDK make (get agents, describe agent, get all), answered from
// svcbridge's inventory in the reference controller's shape. Read-only:
// svcbridge's agents are written through /agents.
func (s *Server) iofogRoutes(g *gin.RouterGroup) {
	g.GET("/iofog-list", s.listFogs)
	g.GET("/iofog/:uuid", s.getFog)
}

// defaultRouterName is how the reference controller names the default
// router among an agent's upstream routers.
const defaultRouterName = "default-router"

// iofogTime is how the reference controller's answers write a timestamp.
func iofogTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// iofogAgent is a as the reference controller answers an agent: the
// fields svcbridge holds where the reference keeps them (the default
// router's agent is its system agent; the default router, among upstream
// routers, is "default-router"), every other field as the reference
// answers one never set. defaultRouter is the default router's agent
// uuid, "" when there is none.
func iofogAgent(a inventory.Agent, defaultRouter string) wire.Fog {
	f := wire.Fog{
		UUID: a.UUID, Name: a.Name, Host: a.Host, IsSystem: a.DefaultRouter, RouterMode: a.RouterMode,
		Tags: a.Tags, CreatedAt: iofogTime(a.CreatedAt), UpdatedAt: iofogTime(a.UpdatedAt),

		DaemonStatus: "NOT_PROVISIONED", IPAddress: "0.0.0.0", IPAddressExternal: "0.0.0.0",
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

func (s *Server) getFog(c *gin.Context) {
	id := c.Param("uuid")
	f, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (wire.Fog, error) {
		// By uuid only, as the reference finds an agent here.
		a, err := tx.AgentByUUID(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return wire.Fog{}, notFound("Invalid ioFog UUID '%s'", id)
		} else if err != nil {
			return wire.Fog{}, err
		}
		defaultRouter, err := defaultRouterUUID(ctx, tx)
		return iofogAgent(a, defaultRouter), err
	})
	if ok {
		c.JSON(http.StatusOK, f)
	}
}
