package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

func (s *Server) serviceRoutes(g *gin.RouterGroup) {
	g.GET("/services", s.listServices)
	g.POST("/services", s.createServiceJSON)
	g.POST("/services/yaml", s.createServiceYAML)
	g.GET("/services/:name", s.getService)
	g.PATCH("/services/:name", s.updateServiceJSON)
	g.PATCH("/services/yaml/:name", s.updateServiceYAML)
	g.DELETE("/services/:name", noBody, s.deleteService)
	g.POST("/services/:name/reconcile", noBody, s.reconcileService)
	g.GET("/services/:name/distribution", s.previewDistribution)
}

// serviceView is svc as the API answers it (see view), its references
// named by n.
func (s *Server) serviceView(ctx context.Context, svc service.Service, n names) wire.Service {
	return s.view(svc, n, s.waitNote(ctx, []service.Service{svc}))
}

// serviceNames reads the names of what svcs refer to.
func serviceNames(ctx context.Context, tx *store.Tx, svcs ...service.Service) (names, error) {
	return serviceNamesKnowing(ctx, tx, nil, svcs...)
}

// serviceNamesKnowing is serviceNames of a caller that read the names of
// the agents known already.
func serviceNamesKnowing(ctx context.Context, tx *store.Tx, known map[string]string, svcs ...service.Service) (names, error) {
	refs := nameRefs{known: known}
	for _, svc := range svcs {
		refs.service(svc)
	}
	return readNames(ctx, tx, refs)
}

// waits reports whether svc waits for a worker's reconcile.
func waits(svc service.Service) bool {
	return svc.ProvisioningStatus == service.StatusPending || svc.ProvisioningStatus == service.StatusDeleting
}

// waitNote says why services wait when no worker polls; Temporal is asked
// (through the cache) only when one of svcs waits.
func (s *Server) waitNote(ctx context.Context, svcs []service.Service) string {
	if !slices.ContainsFunc(svcs, waits) {
		return ""
	}
	_, note, _ := s.workers(ctx)
	return note
}

// view is svc as the API answers it, with note when it waits, and why it
// has no endpoint when one is expected (service.Unreachable): ready or
// not, such a service never reads as if clients could reach it.
func (s *Server) view(svc service.Service, n names, note string) wire.Service {
	v := s.serviceAnswer(svc, n)
	var notes []string
	if waits(svc) && note != "" {
		notes = append(notes, note)
	}
	if why := service.Unreachable(svc, n.agent); why != "" {
		notes = append(notes, "no endpoint: "+why)
	}
	v.ProvisioningMessage = strings.Join(notes, "; ")
	return v
}

// serviceAnswer is svc as the API answers it, with where its objects go
// as service.Place decided it: clients need not work it out again.
func (s *Server) serviceAnswer(svc service.Service, n names) wire.Service {
	var k8s json.RawMessage
	if svc.Kubernetes != nil {
		k8s, _ = json.Marshal(svc.Kubernetes) // strings, lists and maps: cannot fail
	}
	return wire.Service{
		Name: svc.Name, Tags: svc.Tags, Type: svc.Type, Resource: svc.Resource, TargetPort: svc.TargetPort,
		DefaultBridge: svc.DefaultBridge, ServicePort: svc.ServicePort, K8sType: svc.K8sType, Kubernetes: k8s,
		BridgePort: svc.BridgePort, ServiceEndpoint: svc.ServiceEndpoint,
		ProvisioningStatus: svc.ProvisioningStatus, ProvisioningError: svc.ProvisioningError,
		Generation: svc.Generation, ObservedGeneration: svc.ObservedGeneration,
		ReconcileRequest: svc.ReconcileRequest, ObservedReconcileRequest: svc.ObservedReconcileRequest,
		CreatedAt: wire.Time(svc.CreatedAt), UpdatedAt: wire.Time(svc.UpdatedAt),
		Placement: &wire.Placement{ConnectorAgent: svc.Placement.ConnectorSite, HubAgent: svc.Placement.HubSite,
			ConnectorAgentName: n.agent(svc.Placement.ConnectorSite), HubAgentName: n.agent(svc.Placement.HubSite)},
		ResourceName: n.resource(svc.Spec), DefaultBridgeName: n.bridge(svc.Spec),
		WorkflowRef: s.workflowRef(svc.Name),
	}
}

// deleting is a deleted service whose objects remain on routers: only
// its name and status are known.
func deleting(name string) service.Service {
	return service.Service{Spec: service.Spec{Name: name, Tags: []string{}}, ProvisioningStatus: service.StatusDeleting}
}

// shown is v as the API answers it: a deleting service without the spec
// it no longer has, else v (not copied: a list shows thousands).
func shown(v *wire.Service) any {
	if v.ProvisioningStatus != service.StatusDeleting {
		return v
	}
	return wire.DeletingService{Name: v.Name, ProvisioningStatus: v.ProvisioningStatus, WorkflowRef: v.WorkflowRef,
		ProvisioningMessage: v.ProvisioningMessage, Distribution: v.Distribution}
}

func serviceNotFound(name string) *Error {
	return notFound("Service with name %s not found", name)
}

// listServices lists the services, and the deleted ones still being
// removed, by name.
func (s *Server) listServices(c *gin.Context) {
	// A waiting service shows Temporal's note on workers, which no change
	// of the store moves: while one waits, a watch reads again when the
	// note differs from the one it showed (asked of Temporal through the
	// API's cache, at most every few seconds).
	var waiting atomic.Bool
	var shownNote atomic.Pointer[string]
	changes := listChanges{count: func() (uint64, bool) {
		count, current := s.Store.ListedChanges()
		if waiting.Load() {
			_, note, _ := s.workers(context.Background())
			shown := shownNote.Load()
			current = current && shown != nil && *shown == note
		}
		return count, current
	}}
	serveList(s, c, changes, s.readServices, func(svc service.Service) []string { return []string{svc.Name} }, func(page []service.Service) (listShow[wire.Service], error) {
		// Only what is shown is viewed: Temporal is asked about those only.
		var refs nameRefs
		for _, svc := range page {
			refs.service(svc)
		}
		n, err := s.readNamesOf(c, refs)
		if err != nil {
			return listShow[wire.Service]{}, err
		}
		note := s.waitNote(c.Request.Context(), page)
		shownNote.Store(&note)
		waiting.Store(slices.ContainsFunc(page, waits))
		// A service shows as its row (its version), the names it refers
		// to and the note say: nothing else of an answer moves.
		return listShow[wire.Service]{
			item: func(i int, v *wire.Service) any {
				*v = s.view(page[i], n, note)
				return shown(v)
			},
			version: func(i int) int64 { return page[i].Version },
			context: n.digest(note),
		}, nil
	})
}

// readServices reads the services, and the deleted ones still being
// removed, by name: the page q asks for (and one more, to tell whether
// another page follows), so a page costs the same however many there are.
func (s *Server) readServices(c *gin.Context, q pageQuery) ([]service.Service, error) {
	ctx := c.Request.Context()
	after, limit := "", 0
	if q.after != nil {
		after = q.after[0]
	}
	if q.limit > 0 {
		limit = q.limit + 1
	}
	var svcs []service.Service
	err := s.readTx(c, func(tx *store.Tx) (err error) {
		if svcs, err = tx.ServicesAfter(ctx, after, limit); err != nil {
			return err
		}
		gone, err := tx.DeletingServicesAfter(ctx, after, limit)
		if len(gone) > 0 { // else svcs, sorted, may be the store's own: read-only
			svcs = slices.Clone(svcs)
			for _, name := range gone {
				svcs = append(svcs, deleting(name))
			}
			slices.SortFunc(svcs, func(a, b service.Service) int { return strings.Compare(a.Name, b.Name) })
		}
		return err
	})
	return svcs, err
}

// lookupService returns a service, or a deleted one whose objects remain
// (status deleting); ErrNotFound when neither.
func lookupService(ctx context.Context, tx *store.Tx, name string) (service.Service, error) {
	svc, err := tx.GetService(ctx, name)
	if !errors.Is(err, store.ErrNotFound) {
		return svc, err
	}
	if gone, derr := tx.ServiceDeleting(ctx, name); derr != nil || gone {
		return deleting(name), derr
	}
	return svc, err
}

// DefaultServiceRecheck is how often a long poll on a service reads it
// again unwoken: what agents move (an agent's report or acknowledgement,
// its name or tags) changes the service's distribution without a write of
// the service, as the workers' polls change the note of a waiting one,
// and while the change feed is not current a write may come unannounced.
const DefaultServiceRecheck = time.Second

// getService answers a service with an ETag. With If-None-Match naming
// it, the answer is a 304; with timeoutSeconds too, a long poll: it
// answers as soon as the service differs, woken by the writes of the
// service (the change feed) and reading it again every ServiceRecheck,
// else a 304 after the timeout.
func (s *Server) getService(c *gin.Context) {
	wait, err := longPollWait(c)
	if err != nil {
		fail(c, err)
		return
	}
	name := c.Param("name")
	var body []byte
	var etag string
	read := func() (string, error) {
		var err error
		if body, err = s.serviceJSON(c, name); err != nil {
			return "", err
		}
		etag = bodyETag(body)
		return etag, nil
	}
	if ifNoneMatch := c.GetHeader("If-None-Match"); ifNoneMatch == "" {
		_, err = read()
	} else {
		var changed bool
		changed, err = awaitChange(c, ifNoneMatch, wait,
			func() (<-chan struct{}, func()) { return s.Store.WatchService(name) },
			func() time.Duration { return s.ServiceRecheck }, read)
		if err == nil && !changed {
			return
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("ETag", etag)
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

// serviceJSON reads a service, with its distribution, as GET answers it.
func (s *Server) serviceJSON(c *gin.Context, name string) ([]byte, error) {
	ctx := c.Request.Context()
	var svc service.Service
	var dist []wire.DistributionEntry
	var n names
	err := s.readTx(c, func(tx *store.Tx) (err error) {
		if svc, err = lookupService(ctx, tx, name); err != nil {
			return err
		}
		if n, err = serviceNames(ctx, tx, svc); err != nil {
			return err
		}
		dist, err = s.serviceDistribution(ctx, tx, svc)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		err = serviceNotFound(name)
	}
	if err != nil {
		return nil, err
	}
	v := s.serviceView(ctx, svc, n)
	v.Distribution = dist
	return json.Marshal(shown(&v))
}

// bodyETag is the ETag of an answer's body: its hash.
func bodyETag(body []byte) string {
	h := fnv.New64a()
	h.Write(body)
	return `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}

func (s *Server) createServiceJSON(c *gin.Context) {
	p, ok := jsonDocument(c, service.DecodeJSON)
	if !ok {
		return
	}
	s.createService(c, p)
}

func (s *Server) createServiceYAML(c *gin.Context) {
	p, ok := yamlUpload(c, "service", service.DecodeYAML)
	if !ok {
		return
	}
	s.createService(c, p)
}

// createService validates fully, then allocates the bridge port and
// inserts the row in one transaction, then starts the service's workflow.
func (s *Server) createService(c *gin.Context, p service.Patch) {
	ctx := c.Request.Context()
	if err := p.RequireCreate(); err != nil {
		fail(c, err)
		return
	}
	spec := p.Apply(service.Spec{Tags: []string{}}).WithDefaults()
	if err := service.Validate(spec, s.ControlPlane); err != nil {
		fail(c, err)
		return
	}
	requested, err := requestedBridgePort(c)
	if err != nil {
		fail(c, err)
		return
	}
	var svc service.Service
	var preview []wire.DistributionEntry
	var n names
	// Creates beyond the slots wait here, not in transactions holding
	// connections that reads and the reconciles need. The slot is the
	// transaction's only: starting the workflow after it waits on
	// Temporal, not on other creates.
	err = s.createSlot(func() error {
		return s.inTx(c, func(tx *store.Tx) error {
			// From spec on every attempt: a retried transaction must not start
			// from what a failed one resolved or read back.
			svc = service.Service{Spec: spec}
			placement, held, err := s.resolve(ctx, tx, &svc.Spec)
			if err == nil {
				svc.BridgePort, err = s.bridgePort(ctx, tx, requested)
			}
			if err != nil {
				// A taken name is the answer whatever else is wrong; a
				// create that goes through learns it from its insert.
				if _, gerr := tx.GetService(ctx, spec.Name); gerr == nil {
					return conflict("Service with name %s already exists", spec.Name)
				}
				return err
			}
			svc = svc.WithPlacement(placement, s.ControlPlane)
			// InsertService sets svc as stored, so the answer equals a
			// later GET.
			if err := tx.InsertService(ctx, &svc); err != nil {
				return err
			}
			if n, err = serviceNamesKnowing(ctx, tx, held, svc); err != nil {
				return err
			}
			if err := tx.RecordEvent(ctx, store.Event{Service: svc.Name, Type: store.EventNormal, Reason: store.ReasonCreated,
				Generation: svc.Generation, Message: fmt.Sprintf("created with bridge port %d", svc.BridgePort)}); err != nil || !isDryRun(ctx) {
				return err
			}
			// A dry run answers the agents that would listen too.
			preview, err = s.serviceDistribution(ctx, tx, svc)
			return err
		})
	})
	if store.IsConflict(err, store.ServiceNameKey) {
		err = conflict("Service with name %s already exists", spec.Name)
	} else if store.IsConflict(err, store.ServiceBridgePortKey) && requested != nil {
		err = bridgePortTaken(*requested, "")
	}
	if err != nil {
		fail(c, err)
		return
	}
	s.afterCommit(c, "service "+svc.Name, s.Reconciler.ServiceCreated(reconcileCtx(c), svc.Name))
	if isDryRun(ctx) && requested == nil {
		warnFirstFreePort(c, svc.Name, svc.BridgePort)
	}
	v := s.serviceView(ctx, svc, n)
	v.Distribution = preview // a dry run's; nil, so absent, otherwise
	c.JSON(http.StatusCreated, v)
}

// requestedBridgePort is the create's ?bridgePort=, the port the client
// asks for (an import keeping the port its consumers use); nil when absent.
func requestedBridgePort(c *gin.Context) (*int, error) {
	raw, ok := c.GetQuery("bridgePort")
	if !ok {
		return nil, nil
	}
	port, err := strconv.Atoi(raw)
	if err != nil || strconv.Itoa(port) != raw {
		return nil, badRequest("Query parameter 'bridgePort' must be an integer, not %q", raw)
	}
	return &port, nil
}

// bridgePort assigns a new service's bridge port: the one requested when
// it is in the range and free (else a 400 or 409 naming it), otherwise
// the first free one.
func (s *Server) bridgePort(ctx context.Context, tx *store.Tx, requested *int) (int, error) {
	if requested != nil {
		err := tx.ClaimBridgePort(ctx, s.BridgePorts, *requested)
		var taken *store.BridgePortTakenError
		switch {
		case errors.Is(err, store.ErrBridgePortOutOfRange):
			return 0, badRequest("Requested bridgePort %d is outside the bridge port range %s", *requested, s.BridgePortsRaw)
		case errors.As(err, &taken):
			return 0, bridgePortTaken(taken.Port, taken.Service)
		}
		return *requested, err
	}
	port, err := tx.AllocateBridgePort(ctx, s.BridgePorts)
	if errors.Is(err, store.ErrNoBridgePort) {
		return 0, apiErr(http.StatusConflict, "ConflictError", "No bridge port available in range for %s", s.BridgePortsRaw)
	}
	return port, err
}

// bridgePortTaken is the 409 of a requested port another service holds
// (by "": a create committed meanwhile).
func bridgePortTaken(port int, by string) *Error {
	if by == "" {
		return apiErr(http.StatusConflict, "ConflictError", "Requested bridgePort %d is taken by another service", port)
	}
	return apiErr(http.StatusConflict, "ConflictError", "Requested bridgePort %d is taken by service %s", port, by)
}

// createSlot runs f holding one of the process's concurrentCreates slots.
func (s *Server) createSlot(f func() error) error {
	s.creates <- struct{}{}
	defer func() { <-s.creates }()
	return f()
}

func (s *Server) updateServiceJSON(c *gin.Context) {
	p, ok := jsonDocument(c, service.DecodeJSON)
	if !ok {
		return
	}
	// JSON PATCH is partial: absent fields keep their stored values.
	s.updateService(c, p, func(old service.Spec) service.Spec { return p.Apply(old) })
}

func (s *Server) updateServiceYAML(c *gin.Context) {
	name := c.Param("name")
	p, ok := yamlUpload(c, "service", service.DecodeYAML)
	if !ok {
		return
	}
	err := service.CheckYAMLName(p, name)
	if err == nil {
		err = p.RequireCreate()
	}
	if err != nil {
		fail(c, err)
		return
	}
	// The YAML is the whole desired document: absent fields are absent.
	s.updateService(c, p, func(service.Spec) service.Spec { return p.Apply(service.Spec{Tags: []string{}}) })
}

// updateService applies desired to the stored spec, validates, resolves and
// writes in one transaction, then signals the workflow. 204 as the
// reference: clients re-read the service to follow provisioning. A change
// that leaves the spec as it is (service.SameSpec: an empty PATCH, a YAML
// document of what is stored) writes nothing and starts no reconcile, as
// Kubernetes' no-op update: generation unchanged, still 204 as every PATCH
// of the reference answers.
func (s *Server) updateService(c *gin.Context, p service.Patch, desired func(service.Spec) service.Spec) {
	ctx := c.Request.Context()
	name := c.Param("name")
	var svc service.Service
	var preview []wire.DistributionEntry
	var n names
	unchanged := false
	err := s.inTx(c, func(tx *store.Tx) error {
		old, err := tx.GetService(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return serviceNotFound(name)
		}
		if err != nil {
			return err
		}
		spec := desired(old.Spec).WithDefaults()
		// A client may name the bridge agent the service stores by uuid.
		if spec.DefaultBridge != service.DefaultBridge && spec.DefaultBridge != old.DefaultBridge {
			if uuid, err := tx.AgentUUID(ctx, spec.DefaultBridge); err == nil && uuid == old.DefaultBridge {
				spec.DefaultBridge = uuid
			}
		}
		// Immutables first, as in the reference: a changed type or bridge
		// is the error to report, not what the new value would violate.
		if err := service.ValidateUpdate(old.Spec, spec); err != nil {
			return err
		}
		if err := service.Validate(spec, s.ControlPlane); err != nil {
			return err
		}
		placement, _, err := s.resolve(ctx, tx, &spec)
		if err != nil {
			return err
		}
		svc = old
		svc.Spec = spec
		svc = svc.WithPlacement(placement, s.ControlPlane)
		if unchanged = service.SameSpec(old.Spec, svc.Spec); unchanged {
			svc = old
		} else {
			if err := tx.UpdateService(ctx, &svc); err != nil {
				return err
			}
			if err := tx.RecordEvent(ctx, store.Event{Service: name, Type: store.EventNormal, Reason: store.ReasonUpdated,
				Generation: old.Generation + 1, Message: "spec updated"}); err != nil || !isDryRun(ctx) {
				return err
			}
			// A dry run answers what the write would make, as Kubernetes'.
			if svc, err = tx.GetService(ctx, name); err != nil {
				return err
			}
		}
		if !isDryRun(ctx) {
			return nil
		}
		// A dry run answers the service as a GET does, with its distribution.
		if n, err = serviceNames(ctx, tx, svc); err != nil {
			return err
		}
		preview, err = s.serviceDistribution(ctx, tx, svc)
		return err
	})
	if err != nil {
		fail(c, err)
		return
	}
	if !unchanged {
		s.afterCommit(c, "service "+name, s.Reconciler.ServiceChanged(reconcileCtx(c), name))
	}
	if isDryRun(ctx) {
		v := s.serviceView(ctx, svc, n)
		v.Distribution = preview
		c.JSON(http.StatusOK, v)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) deleteService(c *gin.Context) {
	ctx := c.Request.Context()
	name := c.Param("name")
	err := s.inTx(c, func(tx *store.Tx) error {
		// On Kubernetes its Service and hub pairs remain until a reconcile
		// removes them: the service shows as deleting meanwhile.
		if err := tx.DeleteService(ctx, name, s.ControlPlane.Kubernetes()); err != nil {
			return err
		}
		return tx.RecordEvent(ctx, store.Event{Service: name, Type: store.EventNormal, Reason: store.ReasonDeleted,
			Message: "deleted; its router objects are being removed"})
	})
	if errors.Is(err, store.ErrNotFound) {
		err = serviceNotFound(name)
	}
	if err != nil {
		fail(c, err)
		return
	}
	// The row is gone and its port free; the workflow removes its objects
	// from every router it recorded them on.
	s.afterCommit(c, "service "+name, s.Reconciler.ServiceChanged(reconcileCtx(c), name))
	c.Status(http.StatusNoContent)
}

// reconcileService asks for a reconcile now, of a deleting service too
// (its removal retries). Unlike the triggers after a write, a failure to
// reach Temporal is the answer here. The request is counted before the
// signal, so the pass that answers it reads its number.
func (s *Server) reconcileService(c *gin.Context) {
	ctx := c.Request.Context()
	name := c.Param("name")
	var svc service.Service
	var request int64
	err := s.inTx(c, func(tx *store.Tx) (err error) {
		if svc, err = lookupService(ctx, tx, name); err != nil || svc.ProvisioningStatus == service.StatusDeleting {
			return err
		}
		request, err = tx.RequestReconcile(ctx, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		err = serviceNotFound(name)
	}
	if err == nil {
		if rerr := s.Reconciler.ServiceChanged(ctx, name); rerr != nil {
			err = apiErr(http.StatusServiceUnavailable, "UnavailableError", "Could not reach Temporal to start the reconcile: %v", rerr)
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	// Recorded once the reconcile started, so the event never claims a
	// request that Temporal did not take; nothing else changes here.
	if err := s.inTx(c, func(tx *store.Tx) error {
		return tx.RecordEvent(ctx, store.Event{Service: name, Type: store.EventNormal, Reason: store.ReasonReconcileRequested,
			Generation: svc.Generation, Message: "reconcile requested through the API"})
	}); err != nil {
		s.requestLogger(c).WarnContext(ctx, "could not record the reconcile request's event", "service", name, "error", err)
	}
	c.JSON(http.StatusAccepted, wire.ReconcileAccepted{Name: name, WorkflowID: s.IDs.Service(name), ReconcileRequest: request})
}

// resolve checks a spec against the inventory at request time and rewrites
// resource and defaultBridge to the uuids they are stored as. It only turns
// the names into uuids: what service.Place decides from is read by the
// store's one placement loader, as a reconcile reads it. It returns where
// the service's objects will go, and the names of the agents it holds.
func (s *Server) resolve(ctx context.Context, tx *store.Tx, spec *service.Spec) (service.Placement, map[string]string, error) {
	switch spec.Type {
	case service.TypeMicroservice:
		uuid, err := tx.MicroserviceUUID(ctx, spec.Resource)
		if errors.Is(err, store.ErrNotFound) {
			kind := "UUID"
			if strings.Contains(spec.Resource, "/") {
				kind = "NAME"
			}
			return service.Placement{}, nil, badRequest("Invalid microservice %s '%s'", kind, spec.Resource)
		}
		if err != nil {
			return service.Placement{}, nil, err
		}
		spec.Resource = uuid
	case service.TypeAgent:
		uuid, err := tx.AgentUUID(ctx, spec.Resource)
		if errors.Is(err, store.ErrNotFound) {
			return service.Placement{}, nil, badRequest("Invalid ioFog UUID '%s'", spec.Resource)
		}
		if err != nil {
			return service.Placement{}, nil, err
		}
		spec.Resource = uuid
	}
	// A bridge no agent answers to stays as the client named it, for
	// Place to quote.
	svc := service.Service{Spec: *spec}
	if spec.DefaultBridge != service.DefaultBridge {
		uuid, err := tx.AgentUUID(ctx, spec.DefaultBridge)
		if err == nil {
			svc.DefaultBridge = uuid
		} else if !errors.Is(err, store.ErrNotFound) {
			return service.Placement{}, nil, err
		}
	}
	in, held, err := tx.PlacementInputHeld(ctx, svc, s.ControlPlane)
	if err != nil {
		return service.Placement{}, nil, err
	}
	p, err := service.Place(in)
	if err != nil {
		return p, nil, err
	}
	// What the service will refer to may not be deleted before this
	// commits (store.HoldAgents): gone meanwhile, it is as if never found.
	if spec.Type == service.TypeMicroservice {
		if err := tx.HoldMicroservice(ctx, spec.Resource); errors.Is(err, store.ErrNotFound) {
			return p, nil, badRequest("Invalid microservice UUID '%s'", spec.Resource)
		} else if err != nil {
			return p, nil, err
		}
	}
	var more []string // placed, not held yet (the default router is)
	for _, uuid := range []string{p.ConnectorSite, p.HubSite, p.BackendAgent, p.BridgeAgent} {
		if _, ok := held[uuid]; !ok {
			more = append(more, uuid)
		}
	}
	placed, err := tx.HoldAgents(ctx, more...)
	if errors.Is(err, store.ErrNotFound) {
		return p, nil, conflict("An agent service %s needs was deleted meanwhile; retry", spec.Name)
	} else if err != nil {
		return p, nil, err
	}
	maps.Copy(held, placed)
	// Placed, a custom bridge was found: it is stored by uuid.
	spec.DefaultBridge = svc.DefaultBridge
	return p, held, nil
}
