package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"svcbridge/document"
	"svcbridge/inventory"
	"svcbridge/store"
	"svcbridge/wire"
)

func (s *Server) microserviceRoutes(g *gin.RouterGroup) {
	g.GET("/microservices", s.listMicroservices)
	g.POST("/microservices", s.createMicroservice)
	g.GET("/microservices/:uuid", s.getMicroservice)
	g.PATCH("/microservices/:uuid", s.patchMicroservice)
	g.DELETE("/microservices/:uuid", noBody, s.deleteMicroservice)
}

// microserviceAnswer is m as the API answers it: svcbridge's fields, its
// agent named by n, and the reference controller's.
func microserviceAnswer(m inventory.Microservice, n names) wire.Microservice {
	return wire.Microservice{UUID: m.UUID, Application: m.Application, Name: m.Name, Agent: m.AgentUUID,
		HostNetworkMode: m.HostNetworkMode, CreatedAt: wire.Time(m.CreatedAt), UpdatedAt: wire.Time(m.UpdatedAt),
		AgentName: n.agent(m.AgentUUID), IofogMicroservice: iofogMicroservice(m)}
}

// microserviceView is microserviceAnswer with the names read in tx.
func microserviceView(ctx context.Context, tx *store.Tx, m inventory.Microservice) (wire.Microservice, error) {
	var refs nameRefs
	refs.microservice(m)
	n, err := readNames(ctx, tx, refs)
	return microserviceAnswer(m, n), err
}

func microserviceKey(m inventory.Microservice) []string { return []string{m.Application, m.Name} }

// ofApplication returns app's microservices of sorted (by application,
// then name, as the store lists them): one run, empty when no
// microservice is in app.
func ofApplication(sorted []inventory.Microservice, app string) []inventory.Microservice {
	lo, _ := slices.BinarySearchFunc(sorted, app, func(m inventory.Microservice, app string) int { return strings.Compare(m.Application, app) })
	hi := lo
	for hi < len(sorted) && sorted[hi].Application == app {
		hi++
	}
	return sorted[lo:hi]
}

// listMicroservices answers the reference controller's list,
// {"microservices": [...]}, of one application with ?application=,
// paged with ?limit= and ?continue= as the other lists are; a watch
// (?watch=true) streams the items' changes as the other lists'. An
// application no microservice is in lists empty, where the reference
// answers 404: svcbridge knows an application only by its microservices,
// and potctl's deploy of an application's first microservice lists the
// application's microservices before it creates the microservice.
//
// With ?name= too, the one microservice of that name in the application,
// read by its key: what apply looks up for each document, where reading
// the whole list each time made applying n microservices n² items.
func (s *Server) listMicroservices(c *gin.Context) {
	app, filtered := c.GetQuery("application")
	name, named := c.GetQuery("name")
	if named && !filtered {
		fail(c, badRequest("Query parameter 'name' needs 'application': a microservice is named within its application"))
		return
	}
	readList := func(c *gin.Context, _ pageQuery) ([]inventory.Microservice, error) {
		if named {
			m, err := txValue(s, c, func(tx *store.Tx, ctx context.Context) (inventory.Microservice, error) {
				return tx.FindMicroservice(ctx, app+"/"+name)
			})
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil
			}
			return []inventory.Microservice{m}, err
		}
		all, err := txValue(s, c, (*store.Tx).ListMicroservices)
		if err != nil || !filtered {
			return all, err
		}
		return ofApplication(all, app), nil
	}
	// The reference's shape: {"microservices": [...]} (wire.MicroserviceList).
	serveListIn(s, c, "microservices", listChanges{count: s.Store.ListedChanges}, readList, microserviceKey, showEach(s, c, (*nameRefs).microservice, microserviceAnswer))
}

// findMicroservice is tx.GetMicroservice with the API's 404.
func findMicroservice(ctx context.Context, tx *store.Tx, id string) (inventory.Microservice, error) {
	m, err := tx.GetMicroservice(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return m, notFound("Microservice %s not found", id)
	}
	return m, err
}

func (s *Server) getMicroservice(c *gin.Context) {
	v, ok := read(s, c, func(tx *store.Tx, ctx context.Context) (wire.Microservice, error) {
		m, err := findMicroservice(ctx, tx, c.Param("uuid"))
		if err != nil {
			return wire.Microservice{}, err
		}
		return microserviceView(ctx, tx, m)
	})
	if ok {
		c.JSON(http.StatusOK, v)
	}
}

// checkMicroservice resolves the agent reference (in place, to a uuid) and
// checks that (application, name) is free, in the transaction that writes.
func checkMicroservice(ctx context.Context, tx *store.Tx, m *inventory.Microservice, agentRef *string) error {
	if agentRef != nil {
		a, err := tx.GetAgent(ctx, *agentRef)
		if errors.Is(err, store.ErrNotFound) {
			return badRequest("Invalid agent '%s'", *agentRef)
		} else if err != nil {
			return err
		}
		m.AgentUUID = a.UUID
	}
	other, err := tx.FindMicroservice(ctx, m.Application+"/"+m.Name)
	switch {
	case err == nil && other.UUID != m.UUID:
		return microserviceNameTaken(*m)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	return nil
}

func microserviceNameTaken(m inventory.Microservice) *Error {
	return conflict("Microservice with name %s already exists in application %s", m.Name, m.Application)
}

// msWriteError maps the constraint violations a concurrent request can
// still cause after checkMicroservice passed.
func msWriteError(err error, m inventory.Microservice) error {
	switch {
	case store.IsConflict(err, store.MicroserviceNameKey):
		return microserviceNameTaken(m)
	case store.IsConflict(err, store.MicroserviceUUIDKey):
		return conflict("Microservice with uuid %s already exists", m.UUID)
	case store.IsConflict(err, store.ForeignKey):
		// The agent was deleted meanwhile, or a service started using
		// the microservice.
		return inUse("Microservice %s/%s: a referenced agent or service changed concurrently; retry", m.Application, m.Name)
	case errors.Is(err, store.ErrNotFound):
		return notFound("Microservice %s not found", m.UUID)
	}
	return err
}

func (s *Server) createMicroservice(c *gin.Context) {
	in, ok := jsonDocument(c, inventory.DecodeMicroserviceJSON)
	if !ok {
		return
	}
	if out, ok := s.addMicroservice(c, in); ok {
		c.JSON(http.StatusCreated, out)
	}
}

// addMicroservice validates and stores a new microservice, answering it as
// GET would. When it fails it has answered the error and reports false.
func (s *Server) addMicroservice(c *gin.Context, in inventory.MicroserviceInput) (wire.Microservice, bool) {
	var out wire.Microservice
	m := in.Apply(inventory.Microservice{UUID: uuid.NewString()})
	if in.UUID != nil {
		m.UUID = *in.UUID
	}
	if err := inventory.ValidateMicroservice(m); err != nil {
		fail(c, err)
		return out, false
	}
	if in.Agent == nil {
		fail(c, document.Missing("agent"))
		return out, false
	}
	ctx := c.Request.Context()
	err := s.inTx(c, func(tx *store.Tx) error {
		if err := checkMicroservice(ctx, tx, &m, in.Agent); err != nil {
			return err
		}
		if _, err := tx.GetMicroservice(ctx, m.UUID); err == nil {
			return conflict("Microservice with uuid %s already exists", m.UUID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.CreateMicroservice(ctx, &m); err != nil {
			return err
		}
		stored, err := tx.GetMicroservice(ctx, m.UUID)
		if err != nil {
			return err
		}
		out, err = microserviceView(ctx, tx, stored)
		return err
	})
	if err != nil {
		fail(c, msWriteError(err, m))
		return out, false
	}
	// Nothing refers to a new microservice yet, so nothing to reconcile.
	return out, true
}

func (s *Server) patchMicroservice(c *gin.Context) {
	in, ok := jsonDocument(c, inventory.DecodeMicroserviceJSON)
	if !ok {
		return
	}
	if out, ok := s.changeMicroservice(c, in); ok {
		c.JSON(http.StatusOK, out)
	}
}

// changeMicroservice applies in to the microservice of the path's uuid
// (absent fields keep their stored values), validates and stores it,
// reconciles the services that use it when its routing changed, and
// answers it as GET would, with the services it breaks in Warning headers.
// When it fails it has answered the error and reports false.
func (s *Server) changeMicroservice(c *gin.Context, in inventory.MicroserviceInput) (wire.Microservice, bool) {
	id := c.Param("uuid")
	ctx := c.Request.Context()
	var old, m inventory.Microservice
	var out wire.Microservice
	var services []string
	var broken []breakage
	err := s.inTx(c, func(tx *store.Tx) error {
		var err error
		if old, err = findMicroservice(ctx, tx, id); err != nil {
			return err
		}
		if in.UUID != nil && *in.UUID != old.UUID {
			return badRequest("Field 'uuid' cannot be changed")
		}
		m = in.Apply(old)
		if err := inventory.ValidateMicroservice(m); err != nil {
			return err
		}
		if err := checkMicroservice(ctx, tx, &m, in.Agent); err != nil {
			return err
		}
		if err := tx.UpdateMicroservice(ctx, &m); err != nil {
			return err
		}
		if services, err = tx.ServicesOfMicroservice(ctx, m.UUID); err != nil {
			return err
		}
		if inventory.MicroserviceRoutingChanged(old, m) {
			if err := tx.QueueAgents(ctx, movedAgents(old, m)); err != nil {
				return err
			}
			if err := tx.RequestReconcilesFor(ctx, services, "reconcile requested by a change of microservice "+m.Application+"/"+m.Name); err != nil {
				return err
			}
			if broken, err = s.brokenServices(ctx, tx, services); err != nil {
				return err
			}
		}
		stored, err := tx.GetMicroservice(ctx, m.UUID)
		if err != nil {
			return err
		}
		out, err = microserviceView(ctx, tx, stored)
		return err
	})
	if err != nil {
		fail(c, msWriteError(err, m))
		return out, false
	}
	if inventory.MicroserviceRoutingChanged(old, m) {
		rctx := reconcileCtx(c)
		for _, svc := range services {
			s.afterCommit(c, "service "+svc, s.Reconciler.ServiceChanged(rctx, svc))
		}
		agents := movedAgents(old, m)
		s.afterCommit(c, "agents "+strings.Join(agents, ","), s.Reconciler.AgentsQueued(rctx, agents...))
	}
	warnBroken(c, broken)
	return out, true
}

// movedAgents are the agents whose routers a change of a microservice
// from old to m concerns: the one it ran on, and the one it runs on now.
func movedAgents(old, m inventory.Microservice) []string {
	if m.AgentUUID == old.AgentUUID {
		return []string{old.AgentUUID}
	}
	return []string{old.AgentUUID, m.AgentUUID}
}

func (s *Server) deleteMicroservice(c *gin.Context) {
	id := c.Param("uuid")
	ctx := c.Request.Context()
	var m inventory.Microservice
	err := s.inTx(c, func(tx *store.Tx) error {
		var err error
		if m, err = findMicroservice(ctx, tx, id); err != nil {
			return err
		}
		// Creates holding it finish first, and are seen (store.HoldAgents).
		if err := tx.LockForDelete(ctx, "microservices", m.UUID); errors.Is(err, store.ErrNotFound) {
			return notFound("Microservice %s not found", id)
		} else if err != nil {
			return err
		}
		services, err := tx.ServicesOfMicroservice(ctx, m.UUID)
		if err != nil {
			return err
		}
		if len(services) > 0 {
			return inUse("Microservice %s/%s cannot be deleted: services %s use it", m.Application, m.Name, strings.Join(services, ", "))
		}
		return tx.DeleteMicroservice(ctx, m.UUID)
	})
	if err != nil {
		fail(c, msWriteError(err, m))
		return
	}
	c.Status(http.StatusNoContent)
}
