package store

import (
	"context"
	"errors"

	"svcbridge/inventory"
	"svcbridge/service"
)

// PlacementInput loads the agents a service's placement depends on, for
// service.Place: the worker's pass, the API's create and update (once it
// has turned names into uuids) and its preview of what an inventory
// change breaks read them the same way.
func (t *Tx) PlacementInput(ctx context.Context, svc service.Service, controlPlane service.ControlPlane) (service.PlacementInput, error) {
	return t.PlacementInputs(controlPlane).Load(ctx, svc)
}

// PlacementInputHeld is PlacementInput for a write that will refer to what
// is placed: the default router is read and held in one statement, as
// HoldAgents holds it (read, then held, took two on every create). held
// names the agents it holds (uuid -> name).
func (t *Tx) PlacementInputHeld(ctx context.Context, svc service.Service, controlPlane service.ControlPlane) (in service.PlacementInput, held map[string]string, err error) {
	l := t.PlacementInputs(controlPlane)
	l.held = map[string]string{}
	in, err = l.Load(ctx, svc)
	return in, l.held, err
}

// PlacementInputs loads the placement inputs of many services, each agent,
// microservice and the default router read once: the services that depend
// on one changed agent mostly share it.
func (t *Tx) PlacementInputs(controlPlane service.ControlPlane) *PlacementLoader {
	return &PlacementLoader{tx: t, plane: controlPlane,
		agents: map[string]*inventory.Agent{}, microservices: map[string]*inventory.Microservice{}}
}

// PlacementLoader is PlacementInputs' memory, for one transaction.
type PlacementLoader struct {
	tx            *Tx
	plane         service.ControlPlane
	agents        map[string]*inventory.Agent // nil: not found
	microservices map[string]*inventory.Microservice
	defaultRouter **inventory.Agent
	// held, unless nil, are the agents read and held (uuid -> name).
	held map[string]string
}

// Load reads the placement input of svc.
func (l *PlacementLoader) Load(ctx context.Context, svc service.Service) (service.PlacementInput, error) {
	in := service.PlacementInput{Service: svc, ControlPlane: l.plane}
	var err error
	switch svc.Type {
	case service.TypeMicroservice:
		var ms *inventory.Microservice
		if ms, err = memo(l.microservices, svc.Resource, func() (inventory.Microservice, error) {
			return l.tx.GetMicroservice(ctx, svc.Resource)
		}); ms != nil {
			in.Backend, err = l.agent(ctx, ms.AgentUUID)
		}
	case service.TypeAgent:
		in.Backend, err = l.agent(ctx, svc.Resource)
	}
	if err != nil {
		return in, err
	}
	if l.defaultRouter == nil {
		lock := ""
		if l.held != nil {
			lock = l.tx.keyShare()
		}
		a, err := optional(l.tx.defaultRouter(ctx, lock))
		if err != nil {
			return in, err
		}
		if a != nil && l.held != nil {
			l.held[a.UUID] = a.Name
		}
		l.defaultRouter = &a
	}
	in.DefaultRouter = *l.defaultRouter
	if svc.DefaultBridge != service.DefaultBridge {
		in.Bridge, err = l.agent(ctx, svc.DefaultBridge)
	}
	return in, err
}

func (l *PlacementLoader) agent(ctx context.Context, uuid string) (*inventory.Agent, error) {
	return memo(l.agents, uuid, func() (inventory.Agent, error) { return l.tx.AgentByUUID(ctx, uuid) })
}

// memo reads key through load once; a row not found is remembered as nil.
func memo[T any](m map[string]*T, key string, load func() (T, error)) (*T, error) {
	if v, ok := m[key]; ok {
		return v, nil
	}
	v, err := optional(load())
	if err == nil {
		m[key] = v
	}
	return v, err
}

// optional is a row that may be missing: nil when it is.
func optional[T any](v T, err error) (*T, error) {
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}
