package importer

import (
	"svcbridge/inventory"
	"svcbridge/service"
)

// Need is an object of the source that a step needs and svcbridge does
// not hold yet: the step's object can be imported only once it is.
type Need struct {
	Ref
	UUID string
	// DefaultRouter: needed as svcbridge's default router, the hub of a
	// service on the remote control plane.
	DefaultRouter bool
}

// Outcomes follows which objects of a plan are not imported, and why, as
// the plan is applied in order, so that nothing that needs one of them is
// tried: NewPlan passes on conflicts and skips, the CLI the writes
// svcbridge refuses (a dry run's too). A reason names the object at the
// root, by name: what needs a microservice on a refused agent is not
// imported "because agent Edge_5 was refused".
type Outcomes struct {
	why     map[Ref]string
	skipped map[Ref]bool
}

// NotImported records that r is not imported, and why ("agent Edge_5 was
// refused"); skipped: the user chose so (--skip), which is no failure.
func (o *Outcomes) NotImported(r Ref, why string, skipped bool) {
	if o.why == nil {
		o.why, o.skipped = map[Ref]string{}, map[Ref]bool{}
	}
	o.why[r], o.skipped[r] = why, skipped
}

// Why says why r is not imported; ok is false when it is (or, in a dry
// run, would be).
func (o *Outcomes) Why(r Ref) (why string, ok bool) {
	why, ok = o.why[r]
	return why, ok
}

// Blocker says why the first of needs that is not imported is not, and
// whether it was skipped; ok is false when every one is (or, in a dry
// run, would be) imported.
func (o *Outcomes) Blocker(needs []Need) (why string, skipped, ok bool) {
	for _, n := range needs {
		if why, ok := o.Why(n.Ref); ok {
			return why, o.skipped[n.Ref], true
		}
	}
	return "", false, false
}

// pass records what came of s at plan time, and turns s into a skip or a
// block when something it needs is not imported; it reports whether it
// recorded anything new.
func pass[T any](o *Outcomes, kind string, s *Step[T]) bool {
	r := Ref{kind, s.Name}
	if _, done := o.why[r]; done {
		return false
	}
	switch s.Action {
	case Conflict:
		o.NotImported(r, r.String()+" is in conflict", false)
		return true
	case Skip:
		o.NotImported(r, r.String()+" is skipped", true)
		return true
	}
	why, skipped, blocked := o.Blocker(s.Needs)
	if !blocked {
		return false
	}
	s.Action, s.Reason = Blocked, why
	if skipped {
		s.Action = Skip
	}
	o.NotImported(r, why, skipped)
	return true
}

// passOn turns every step that needs an object in conflict or skipped
// (directly or through others) into a block or a skip. Repeated until
// nothing changes: an agent may need one that comes after it (a cycle of
// interior routers).
func (p *Plan) passOn() {
	var o Outcomes
	for changed := true; changed; {
		changed = false
		for i := range p.Agents {
			changed = pass(&o, KindAgent, &p.Agents[i]) || changed
		}
		for i := range p.Microservices {
			changed = pass(&o, KindMicroservice, &p.Microservices[i]) || changed
		}
		for i := range p.Services {
			changed = pass(&o, KindService, &p.Services[i].Step) || changed
		}
	}
}

// ---- svcbridge's rules for what a dry run cannot see ----
//
// A dry run writes nothing, so the server cannot check a reference to an
// object the import creates first (a microservice on a new agent): it
// refuses the dry run at that reference, after every check of the
// object's own fields. What it would check next the plan checks with the
// server's own rules (the same functions), among the agents svcbridge
// holds and those the plan creates.

// CheckAgent applies svcbridge's rules for upstream routers
// (inventory.ResolveUpstreams: each an interior router, not the agent
// itself, none twice) to a's.
func (p Plan) CheckAgent(a Agent) error {
	ups := make([]inventory.Upstream, 0, len(a.UpstreamRouters))
	for _, u := range a.UpstreamRouters {
		up := inventory.Upstream{Ref: u}
		if held, ok := p.agents[u]; ok {
			up.Ref, up.Agent = held.Name, &held
		}
		ups = append(ups, up)
	}
	_, err := inventory.ResolveUpstreams(inventoryAgent(a), ups)
	return err
}

// CheckService applies svcbridge's placement rules (service.Place: a
// backend agent with a router, a default router, a custom bridge that is
// an upstream router of the backend's) to s.
func (p Plan) CheckService(s Service) error {
	in := service.PlacementInput{Service: service.Service{Spec: s}, ControlPlane: p.controlPlane, DefaultRouter: p.agent(p.defaultRouter)}
	switch s.Type {
	case service.TypeMicroservice:
		in.Backend = p.agent(p.microserviceAgents[s.Resource])
	case service.TypeAgent:
		in.Backend = p.agent(s.Resource)
	}
	if s.DefaultBridge != service.DefaultBridge {
		in.Bridge = p.agent(s.DefaultBridge)
	}
	_, err := service.Place(in)
	return err
}

// agent is the agent uuid svcbridge holds or the plan creates, else nil.
func (p Plan) agent(uuid string) *inventory.Agent {
	if a, ok := p.agents[uuid]; ok {
		return &a
	}
	return nil
}

func inventoryAgent(a Agent) inventory.Agent {
	return inventory.Agent{UUID: a.UUID, Name: a.Name, Host: a.Host, RouterMode: a.RouterMode, DefaultRouter: a.DefaultRouter,
		Tags: a.Tags, UpstreamRouters: a.UpstreamRouters}
}

// index records, for CheckAgent and CheckService, the agents and
// microservices svcbridge holds and those the plan creates, and the
// default router.
func (p *Plan) index(dst Target, s Settings) {
	p.controlPlane = s.ControlPlane
	p.agents, p.microserviceAgents = map[string]inventory.Agent{}, map[string]string{}
	for _, a := range dst.Agents {
		p.agents[a.UUID] = inventory.Agent{UUID: a.UUID, Name: a.Name, Host: a.Host, RouterMode: a.RouterMode,
			DefaultRouter: a.DefaultRouter, Tags: a.Tags, UpstreamRouters: a.UpstreamRouters}
	}
	for _, a := range p.Agents {
		if a.Action == Create {
			p.agents[a.Object.UUID] = inventoryAgent(a.Object)
		}
	}
	for uuid, a := range p.agents {
		if a.DefaultRouter {
			p.defaultRouter = uuid
		}
	}
	for _, m := range dst.Microservices {
		p.microserviceAgents[m.UUID] = m.Agent
	}
	for _, m := range p.Microservices {
		if m.Action == Create {
			p.microserviceAgents[m.Object.UUID] = m.Object.AgentUUID
		}
	}
}
