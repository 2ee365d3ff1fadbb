package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"svcbridge/auth"
	"svcbridge/inventory"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

func (s *Server) agentRoutes(g *gin.RouterGroup) {
	g.GET("/agents", s.listAgents)
	g.POST("/agents", s.createAgent)
	// A static segment wins over :agent, so an agent named "yaml" is still
	// reachable by GET/PATCH/DELETE; only POST is the upload.
	g.POST("/agents/yaml", s.uploadAgentYAML)
	g.GET("/agents/:agent", s.getAgent)
	g.PATCH("/agents/:agent", s.patchAgent)
	g.DELETE("/agents/:agent", noBody, s.deleteAgent)
	g.GET("/agents/:agent/router", s.getAgentRouter)
	g.GET("/agents/:agent/services", s.getAgentServices)
	g.POST("/agents/:agent/token", noBody, s.rotateAgentToken)
}

// agentAnswer is a as the API answers it, its upstream routers named by n.
func agentAnswer(a inventory.Agent, n names) wire.Agent {
	out := wire.Agent{UUID: a.UUID, Name: a.Name, Host: a.Host, RouterMode: a.RouterMode, DefaultRouter: a.DefaultRouter,
		Tags: a.Tags, UpstreamRouters: a.UpstreamRouters, CreatedAt: wire.Time(a.CreatedAt), UpdatedAt: wire.Time(a.UpdatedAt),
		UpstreamRouterNames: n.agentList(a.UpstreamRouters), Links: service.Uplinks(a, n.defaultRouter)}
	if r, ok := n.routers[a.UUID]; ok {
		out.Router = r.Shown()
	}
	if ch, ok := n.changes[a.UUID]; ok {
		// Acknowledged as the agent's flag says: cleared by its acknowledgement.
		out.ConfigChange = &wire.ConfigChange{ChangedAt: wire.Time(time.UnixMilli(ch.LastUpdated).UTC()), Acknowledged: !ch.MicroserviceConfig}
	}
	return out
}

// agentView is agentAnswer with the names read in tx.
func agentView(ctx context.Context, tx *store.Tx, a inventory.Agent) (wire.Agent, error) {
	var refs nameRefs
	refs.agent(a)
	n, err := readNames(ctx, tx, refs)
	return agentAnswer(a, n), err
}

func (s *Server) listAgents(c *gin.Context) {
	// A fan-out moves the lists' count every few milliseconds, for a few
	// agents each time: a watch reads only those (by uuid).
	changes := listChanges{count: s.Store.ListedChanges, since: s.Store.ListedAgentsSince}
	serveList(s, c, changes, func(c *gin.Context, q pageQuery) ([]inventory.Agent, error) {
		if q.only != nil {
			return txValue(s, c, func(tx *store.Tx, ctx context.Context) ([]inventory.Agent, error) {
				return tx.ListAgentsIn(ctx, q.only)
			})
		}
		return txValue(s, c, (*store.Tx).ListAgents)
	}, func(a inventory.Agent) []string { return []string{a.Name} }, showEach(s, c, (*nameRefs).agent, agentAnswer))
}

func (s *Server) getAgent(c *gin.Context) {
	v, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (wire.Agent, error) {
		a, err := findAgent(ctx, tx, c.Param("agent"))
		if err != nil {
			return wire.Agent{}, err
		}
		return agentView(ctx, tx, a)
	})
	if ok {
		c.JSON(http.StatusOK, v)
	}
}

// findAgent is tx.GetAgent with the API's 404.
func findAgent(ctx context.Context, tx *store.Tx, ref string) (inventory.Agent, error) {
	a, err := tx.GetAgent(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return a, notFound("Agent %s not found", ref)
	}
	return a, err
}

func (s *Server) createAgent(c *gin.Context) {
	in, ok := jsonDocument(c, inventory.DecodeAgentJSON)
	if !ok {
		return
	}
	s.createAgentFrom(c, in)
}

// createAgentFrom validates and stores a new agent with a fresh credential,
// answering 201 with both.
func (s *Server) createAgentFrom(c *gin.Context, in inventory.AgentInput) {
	id := uuid.NewString()
	if in.UUID != nil {
		var err error
		if id, err = inventory.ParseAgentUUID(*in.UUID); err != nil {
			fail(c, err)
			return
		}
	}
	a := in.Apply(inventory.NewAgent(id))
	if err := inventory.ValidateAgent(a); err != nil {
		fail(c, err)
		return
	}
	token, hash, err := auth.NewAgentToken()
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var out wire.Agent
	err = s.inTx(c, func(tx *store.Tx) error {
		if err := checkAgentRefs(ctx, tx, &a, nil); err != nil {
			return err
		}
		if _, err := tx.GetAgent(ctx, a.UUID); err == nil {
			return conflict("Agent with uuid %s already exists", a.UUID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.CreateAgent(ctx, &a, hash); err != nil {
			return err
		}
		if err := queueAgentAndLinked(ctx, tx, inventory.Agent{}, a); err != nil {
			return err
		}
		// Read back so the answer equals a later GET (the database
		// rounds timestamps).
		stored, err := tx.GetAgent(ctx, a.UUID)
		if err != nil {
			return err
		}
		out, err = agentView(ctx, tx, stored)
		return err
	})
	if err != nil {
		fail(c, s.agentWriteError(c, err, a))
		return
	}
	s.afterCommit(c, "agent", s.Reconciler.AgentsQueued(reconcileCtx(c), a.UUID))
	c.JSON(http.StatusCreated, wire.CreatedAgent{Agent: out, Token: token})
}

func (s *Server) patchAgent(c *gin.Context) {
	in, ok := jsonDocument(c, inventory.DecodeAgentJSON)
	if !ok {
		return
	}
	ref := c.Param("agent")
	find := func(ctx context.Context, tx *store.Tx, _ *inventory.AgentInput) (inventory.Agent, error) {
		return findAgent(ctx, tx, ref)
	}
	if view, ok := changeAgent(s, c, find, in, agentView); ok {
		c.JSON(http.StatusOK, view)
	}
}

// changeAgent is a partial update of an agent (only the keys present in in
// replace stored values): the agent find returns (find, in the write's
// transaction, may also complete in), changed, validated and stored as
// every agent write is, and answered by view (read in that transaction).
// The Warning headers name the services it breaks. When it fails it has
// answered the error and reports false.
func changeAgent[V any](s *Server, c *gin.Context, find func(context.Context, *store.Tx, *inventory.AgentInput) (inventory.Agent, error),
	in inventory.AgentInput, view func(context.Context, *store.Tx, inventory.Agent) (V, error)) (V, bool) {
	ctx := c.Request.Context()
	var a inventory.Agent
	var u agentUpdate
	var v V
	err := s.inTx(c, func(tx *store.Tx) error {
		old, err := find(ctx, tx, &in)
		if err != nil {
			return err
		}
		if in.UUID != nil && *in.UUID != old.UUID {
			return badRequest("Field 'uuid' cannot be changed")
		}
		a = in.Apply(old)
		if u, err = s.writeAgent(ctx, tx, old, &a); err != nil {
			return err
		}
		v, err = view(ctx, tx, u.out)
		return err
	})
	if err != nil {
		fail(c, s.agentWriteError(c, err, a))
		return v, false
	}
	s.agentUpdated(c, u)
	return v, true
}

// uploadAgentYAML creates the agent of a kind: Agent or AgentConfig
// document, or, when the name exists, replaces it with the document.
func (s *Server) uploadAgentYAML(c *gin.Context) {
	in, ok := yamlUpload(c, "agent", inventory.DecodeAgentYAML)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	var exists bool
	var a inventory.Agent
	var u agentUpdate
	var view wire.Agent
	err := s.inTx(c, func(tx *store.Tx) error {
		old, err := tx.GetAgent(ctx, *in.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		case old.Name != *in.Name:
			// GetAgent fell back to the uuid: names cannot look like
			// uuids, so this is a create that ValidateAgent rejects.
			return nil
		}
		exists = true
		// The YAML is the whole desired document: absent fields take
		// their defaults, not their stored values.
		a = in.Apply(inventory.NewAgent(old.UUID))
		if u, err = s.writeAgent(ctx, tx, old, &a); err != nil {
			return err
		}
		view, err = agentView(ctx, tx, u.out)
		return err
	})
	if err != nil {
		fail(c, s.agentWriteError(c, err, a))
		return
	}
	if !exists {
		// A concurrent upload of the same name loses on the unique
		// name with a 409, which is what a create would answer.
		s.createAgentFrom(c, in)
		return
	}
	s.agentUpdated(c, u)
	c.JSON(http.StatusOK, view)
}

// agentUpdate is what an update of an agent stored, for its answer and
// the reconciles it starts: the stored agent, the services that depend on
// it (their reconciles requested) and those it breaks.
type agentUpdate struct {
	out        inventory.Agent
	dependents []string
	broken     []breakage
}

// writeAgent stores a (old changed) in tx, as every update of an agent
// does (updateAgent), and requests the reconciles of the services that
// depend on it.
func (s *Server) writeAgent(ctx context.Context, tx *store.Tx, old inventory.Agent, a *inventory.Agent) (u agentUpdate, err error) {
	if u.out, err = s.updateAgent(ctx, tx, old, a); err != nil {
		return u, err
	}
	if u.dependents, err = dependentServices(ctx, tx, old, u.out); err != nil {
		return u, err
	}
	u.broken, err = s.brokenServices(ctx, tx, u.dependents)
	return u, err
}

// agentUpdated starts the reconciles of a committed update and names, in
// Warning headers, the services it breaks.
func (s *Server) agentUpdated(c *gin.Context, u agentUpdate) {
	s.agentChanged(c, u.out.UUID, u.dependents)
	warnBroken(c, u.broken)
}

// updateAgent validates a (old changed) and writes it in tx, with its
// router queued for a reconcile, returning the stored agent.
func (s *Server) updateAgent(ctx context.Context, tx *store.Tx, old inventory.Agent, a *inventory.Agent) (inventory.Agent, error) {
	if err := inventory.ValidateAgent(*a); err != nil {
		return inventory.Agent{}, err
	}
	if err := checkAgentRefs(ctx, tx, a, &old); err != nil {
		return inventory.Agent{}, err
	}
	if err := tx.UpdateAgent(ctx, a); err != nil {
		return inventory.Agent{}, err
	}
	if err := queueAgentAndLinked(ctx, tx, old, *a); err != nil {
		return inventory.Agent{}, err
	}
	return tx.GetAgent(ctx, a.UUID)
}

// queueAgentAndLinked queues an agent's router for a reconcile after it
// changed from old to a (a new agent: old is the zero Agent; a deleted
// one: a is), and, when the change moves how other routers link to it
// (inventory.LinksChanged), theirs too.
func queueAgentAndLinked(ctx context.Context, tx *store.Tx, old, a inventory.Agent) error {
	uuid := cmp.Or(a.UUID, old.UUID)
	queue := []string{uuid}
	if inventory.LinksChanged(old, a) {
		linked, err := tx.AgentsLinkingTo(ctx, uuid, old.DefaultRouter || a.DefaultRouter)
		if err != nil {
			return err
		}
		queue = append(queue, linked...)
	}
	return tx.QueueAgents(ctx, queue)
}

// dependentServices names the services to reconcile after an agent
// changed from old to a (see inventory.RoutingChanged), and requests their
// reconciles in tx, with the change, each recorded as requested by the
// change of a: the pass's cause as its events tell it.
func dependentServices(ctx context.Context, tx *store.Tx, old, a inventory.Agent) ([]string, error) {
	if !inventory.RoutingChanged(old, a) {
		return nil, nil
	}
	names, err := tx.ServicesDependingOn(ctx, a.UUID, old.DefaultRouter || a.DefaultRouter)
	if err != nil {
		return nil, err
	}
	return names, tx.RequestReconcilesFor(ctx, names, "reconcile requested by a change of agent "+a.Name)
}

// agentChanged starts the reconciles after an agent write: its own router
// and the services that depend on it.
func (s *Server) agentChanged(c *gin.Context, uuid string, services []string) {
	ctx := reconcileCtx(c)
	s.afterCommit(c, "agent", s.Reconciler.AgentsQueued(ctx, uuid))
	for _, name := range services {
		s.afterCommit(c, "service "+name, s.Reconciler.ServiceChanged(ctx, name))
	}
}

// checkAgentRefs checks, in the transaction that writes a, what depends on
// other rows: the unique name, the single default router, the upstream
// routers (resolved to uuids in place) and, on an update (old set), the
// agents that use a as their upstream router.
func checkAgentRefs(ctx context.Context, tx *store.Tx, a *inventory.Agent, old *inventory.Agent) error {
	if other, err := tx.GetAgent(ctx, a.Name); err == nil && other.UUID != a.UUID {
		return conflict("Agent with name %s already exists", a.Name)
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if a.DefaultRouter {
		cur, err := tx.DefaultRouter(ctx)
		if err == nil && cur.UUID != a.UUID {
			return defaultRouterTaken(cur.Name)
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	ups := make([]inventory.Upstream, 0, len(a.UpstreamRouters))
	for _, ref := range a.UpstreamRouters {
		up, err := tx.GetAgent(ctx, ref)
		switch {
		case err == nil:
			ups = append(ups, inventory.Upstream{Ref: ref, Agent: &up})
		case errors.Is(err, store.ErrNotFound):
			ups = append(ups, inventory.Upstream{Ref: ref})
		default:
			return err
		}
	}
	resolved, err := inventory.ResolveUpstreams(*a, ups)
	if err != nil {
		return err
	}
	a.UpstreamRouters = resolved
	if old != nil && inventory.AcceptsRouters(*old) && !inventory.AcceptsRouters(*a) {
		// Their routers would keep dialling a router that no longer
		// listens for them.
		all, err := tx.ListAgents(ctx)
		if err != nil {
			return err
		}
		if users := inventory.UpstreamUsers(*a, all); len(users) > 0 {
			return inUse("Agent %s must keep routerMode interior: agents %s use it as upstream router", old.Name, strings.Join(users, ", "))
		}
	}
	return nil
}

func defaultRouterTaken(current string) *Error {
	return conflict("Agent %s is already the default router; only one agent can be the default router", current)
}

// inUse is the 409 of a change that something else still depends on.
func inUse(format string, args ...any) *Error {
	return apiErr(http.StatusConflict, "ConflictError", format, args...)
}

// agentWriteError maps the constraint violations that a concurrent request
// can still cause after checkAgentRefs passed.
func (s *Server) agentWriteError(c *gin.Context, err error, a inventory.Agent) error {
	switch {
	case store.IsConflict(err, store.AgentNameKey):
		return conflict("Agent with name %s already exists", a.Name)
	case store.IsConflict(err, store.AgentUUIDKey):
		return conflict("Agent with uuid %s already exists", a.UUID)
	case store.IsConflict(err, store.AgentDefaultRouterKey):
		// Name the winner, read after our transaction rolled back.
		if cur, err := txValue(s, c, (*store.Tx).DefaultRouter); err == nil {
			return defaultRouterTaken(cur.Name)
		}
		return conflict("Another agent is already the default router; only one agent can be the default router")
	case store.IsConflict(err, store.ForeignKey):
		return inUse("Agent %s changed or is referenced by a concurrent request; retry", a.Name)
	case errors.Is(err, store.ErrNotFound):
		// Deleted by a concurrent request.
		return notFound("Agent %s not found", a.Name)
	}
	return err
}

func (s *Server) deleteAgent(c *gin.Context) {
	ref := c.Param("agent")
	find := func(ctx context.Context, tx *store.Tx) (inventory.Agent, error) { return findAgent(ctx, tx, ref) }
	if s.removeAgent(c, find, notFound("Agent %s not found", ref)) {
		c.Status(http.StatusNoContent)
	}
}

// removeAgent deletes the agent find returns, unless something refers to
// it; gone is the 404 of an agent deleted meanwhile. When it fails it has
// answered the error and reports false.
func (s *Server) removeAgent(c *gin.Context, find func(context.Context, *store.Tx) (inventory.Agent, error), gone error) bool {
	ctx := c.Request.Context()
	var a inventory.Agent
	err := s.inTx(c, func(tx *store.Tx) error {
		var err error
		if a, err = find(ctx, tx); err != nil {
			return err
		}
		// Writes holding it finish first, and are seen (store.HoldAgents).
		if err := tx.LockForDelete(ctx, "agents", a.UUID); errors.Is(err, store.ErrNotFound) {
			return gone
		} else if err != nil {
			return err
		}
		refs, err := tx.AgentReferences(ctx, a)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			return inUse("Agent %s cannot be deleted: %s", a.Name, strings.Join(refs, "; "))
		}
		if err := tx.DeleteAgent(ctx, a.UUID); err != nil {
			return err
		}
		return queueAgentAndLinked(ctx, tx, a, inventory.Agent{})
	})
	if store.IsConflict(err, store.ForeignKey) {
		// Something started referring to it after AgentReferences looked.
		err = inUse("Agent %s cannot be deleted: it is still referenced", a.Name)
	}
	if err != nil {
		fail(c, err)
		return false
	}
	// The workers drop what they placed for it.
	s.afterCommit(c, "agent", s.Reconciler.AgentsQueued(reconcileCtx(c), a.UUID))
	return true
}

func (s *Server) getAgentRouter(c *gin.Context) {
	ref := c.Param("agent")
	doc, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (routerDoc, error) {
		a, err := findAgent(ctx, tx, ref)
		if err != nil {
			return routerDoc{}, err
		}
		return s.routerDocument(ctx, tx, a, ref, c.GetHeader("If-None-Match"))
	})
	if ok {
		serveRouterDoc(c, doc)
	}
}

// rotateAgentToken gives the agent a new credential; the old one stops
// working when this commits.
func (s *Server) rotateAgentToken(c *gin.Context) {
	ref := c.Param("agent")
	ctx := c.Request.Context()
	token, hash, err := auth.NewAgentToken()
	if err != nil {
		fail(c, err)
		return
	}
	var a inventory.Agent
	err = s.inTx(c, func(tx *store.Tx) error {
		if a, err = findAgent(ctx, tx, ref); err != nil {
			return err
		}
		return tx.SetAgentTokenHash(ctx, a.UUID, hash)
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, wire.AgentToken{Name: a.Name, Token: token, UUID: a.UUID})
}

// reconcileCtx detaches the reconcile trigger from the request: the change
// is committed, and a client that hangs up must not cancel its reconcile.
func reconcileCtx(c *gin.Context) context.Context {
	return context.WithoutCancel(c.Request.Context())
}
