package store

import (
	"context"
	"errors"

	"svcbridge/inventory"
	"svcbridge/service"
)

// PlacementInput loads the agents a stored service's placement depends
// on, for service.Place: the worker's pass and the API's preview of what
// an inventory change breaks read them the same way.
func (t *Tx) PlacementInput(ctx context.Context, svc service.Service, controlPlane service.ControlPlane) (service.PlacementInput, error) {
	in := service.PlacementInput{Service: svc, ControlPlane: controlPlane}
	optional := func(agent inventory.Agent, err error) (*inventory.Agent, error) {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return &agent, err
	}
	var err error
	switch svc.Type {
	case service.TypeMicroservice:
		ms, merr := t.GetMicroservice(ctx, svc.Resource)
		if merr == nil {
			in.Backend, err = optional(t.AgentByUUID(ctx, ms.AgentUUID))
		} else if !errors.Is(merr, ErrNotFound) {
			err = merr
		}
	case service.TypeAgent:
		in.Backend, err = optional(t.AgentByUUID(ctx, svc.Resource))
	}
	if err != nil {
		return in, err
	}
	if in.DefaultRouter, err = optional(t.DefaultRouter(ctx)); err != nil {
		return in, err
	}
	if svc.DefaultBridge != service.DefaultBridge {
		in.Bridge, err = optional(t.AgentByUUID(ctx, svc.DefaultBridge))
	}
	return in, err
}
