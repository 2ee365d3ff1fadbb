package api

import (
	"context"
	"errors"
	"hash/maphash"
	"maps"
	"slices"

	"github.com/gin-gonic/gin"

	"svcbridge/inventory"
	"svcbridge/service"
	"svcbridge/store"
)

// The store refers to agents and microservices by uuid; people write
// their names. Answers carry both: the uuid where the reference's clients
// read it, and beside it the name (the *Name fields), so that what a
// client shows or exports reads like the file it came from and applies
// back as it is (requests take a name wherever they take a uuid). Names
// are read here, once per answer, for every answer that refers to them.

// nameRefs are the uuids an answer refers to, and the agents whose
// routers' reports it shows (routers). Sets: a list of 10,000 services
// refers to a few agents 20,000 times.
type nameRefs struct {
	agents, microservices, routers uuidSet
	// known are agents' names the caller read already (uuid -> name),
	// which are not read again.
	known map[string]string
}

func (r *nameRefs) service(svc service.Service) {
	switch svc.Type {
	case service.TypeMicroservice:
		r.microservices.add(svc.Resource)
	case service.TypeAgent:
		r.agents.add(svc.Resource)
	}
	if svc.DefaultBridge != service.DefaultBridge {
		r.agents.add(svc.DefaultBridge)
	}
	r.agents.add(svc.Placement.ConnectorSite, svc.Placement.HubSite)
}

func (r *nameRefs) agent(a inventory.Agent) {
	r.agents.add(a.UpstreamRouters...)
	r.routers.add(a.UUID)
}

func (r *nameRefs) microservice(m inventory.Microservice) { r.agents.add(m.AgentUUID) }

// uuidSet is a set of uuids, without "".
type uuidSet map[string]struct{}

func (s *uuidSet) add(uuids ...string) {
	for _, u := range uuids {
		if u == "" {
			continue
		}
		if *s == nil {
			*s = uuidSet{}
		}
		(*s)[u] = struct{}{}
	}
}

// sorted is the set's uuids in order.
func (s uuidSet) sorted() []string { return slices.Sorted(maps.Keys(s)) }

// names are the names of the agents and microservices an answer refers
// to. A uuid that nothing answers to any more is shown as it is: still
// what a request accepts, and the truth.
type names struct {
	agents, microservices map[string]string
	// routers are the last reports of the agents' router sides, and
	// defaultRouter the default router's uuid ("" when there is none), for
	// the agents' links; read only for answers with agents.
	routers       map[string]store.RouterReport
	defaultRouter string
	// changes are the agents' change flags, read with routers.
	changes map[string]store.Changes
}

// digestSeed seeds every digest of names: digests of two reads compare.
var digestSeed = maphash.MakeSeed()

// digest is a digest of the names of agents and microservices in n and
// of note, as what shows services beside the services themselves
// (listShow's context): equal for equal names and note, in any order.
func (n names) digest(note string) uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	h.WriteString(note)
	sum := h.Sum64()
	add := func(kind byte, m map[string]string) {
		for uuid, name := range m {
			h.Reset()
			h.WriteByte(kind)
			h.WriteString(uuid)
			h.WriteByte(0)
			h.WriteString(name)
			sum += h.Sum64()
		}
	}
	add('a', n.agents)
	add('m', n.microservices)
	return sum
}

// readNames reads the names of what refs refer to.
func readNames(ctx context.Context, tx *store.Tx, refs nameRefs) (names, error) {
	var n names
	var err error
	unknown := slices.DeleteFunc(refs.agents.sorted(), func(u string) bool { _, ok := refs.known[u]; return ok })
	if n.agents, err = tx.AgentNames(ctx, unknown); err != nil {
		return n, err
	}
	maps.Copy(n.agents, refs.known)
	if n.microservices, err = tx.MicroserviceNames(ctx, refs.microservices.sorted()); err != nil {
		return n, err
	}
	if routers := refs.routers.sorted(); len(routers) > 0 {
		if n.routers, err = tx.RouterReports(ctx, routers); err != nil {
			return n, err
		}
		if n.changes, err = tx.AgentsChanges(ctx, routers); err != nil {
			return n, err
		}
		def, err := tx.DefaultRouter(ctx)
		switch {
		case err == nil:
			n.defaultRouter = def.UUID
		case !errors.Is(err, store.ErrNotFound):
			return n, err
		}
	}
	return n, nil
}

// readNamesOf is readNames in a read transaction of its own, for a list
// page read before.
func (s *Server) readNamesOf(c *gin.Context, refs nameRefs) (n names, err error) {
	err = s.readTx(c, func(tx *store.Tx) error {
		n, err = readNames(c.Request.Context(), tx, refs)
		return err
	})
	return n, err
}

// distinct is ids sorted, without repeats and without "".
func distinct(ids []string) []string {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > 0 && ids[0] == "" {
		ids = ids[1:]
	}
	return ids
}

// agent is the name of the agent uuid ("" stays "").
func (n names) agent(uuid string) string {
	if name, ok := n.agents[uuid]; ok {
		return name
	}
	return uuid
}

// agentList is agent of each of uuids, in order.
func (n names) agentList(uuids []string) []string {
	out := make([]string, len(uuids))
	for i, u := range uuids {
		out[i] = n.agent(u)
	}
	return out
}

// resource is a service's resource as people write it: a microservice's
// application/name, an agent's name, a k8s or external backend as it is.
func (n names) resource(spec service.Spec) string {
	switch spec.Type {
	case service.TypeMicroservice:
		if name, ok := n.microservices[spec.Resource]; ok {
			return name
		}
	case service.TypeAgent:
		return n.agent(spec.Resource)
	}
	return spec.Resource
}

// bridge is a service's defaultBridge as people write it.
func (n names) bridge(spec service.Spec) string {
	if spec.DefaultBridge == service.DefaultBridge {
		return spec.DefaultBridge
	}
	return n.agent(spec.DefaultBridge)
}
