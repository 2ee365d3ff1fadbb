// Package importer decides how a running ioFog controller's agents,
// microservices and services become svcbridge's (`svcbridge import`): given
// what was read from the source, what svcbridge holds and the user's
// renames and skips, Plan says per object whether it is created,
// unchanged, in conflict, skipped or not imported (something it needs is
// not), what it needs, and per service which bridge port it gets and why.
// Pure: the CLI reads and writes.
package importer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"svcbridge/inventory"
	"svcbridge/service"
	"svcbridge/wire"
)

// SourceTagPrefix is the reference controller's prefix of the agent tags
// that select services (hard-coded there).
const SourceTagPrefix = "service.datasance.com/tag"

// DefaultRouterName is how the reference names the default router among
// an agent's upstream routers.
const DefaultRouterName = "default-router"

// SourceAgent is an item of the reference's GET /api/v3/iofog-list, the
// fields the import reads. Not wire.Fog: that declares every field with
// svcbridge's types, and a reference on PostgreSQL answers its BIGINT
// columns as strings, which would fail the whole list.
type SourceAgent struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	Host       string `json:"host"`
	IsSystem   bool   `json:"isSystem"`
	RouterMode string `json:"routerMode"`
	// UpstreamRouters are "default-router" or agent uuids.
	UpstreamRouters []string `json:"upstreamRouters"`
	Tags            []string `json:"tags"`
}

// SourceMicroservice is an item of the reference's GET
// /api/v3/microservices, the fields the import reads (see SourceAgent).
type SourceMicroservice struct {
	UUID            string `json:"uuid"`
	Name            string `json:"name"`
	Application     string `json:"application"` // its name
	AgentUUID       string `json:"iofogUuid"`
	HostNetworkMode bool   `json:"hostNetworkMode"`
}

// Source is what was read from the reference controller. Its services
// have svcbridge's shape (GET /api/v3/services answers the same fields).
type Source struct {
	Agents        []SourceAgent
	Microservices []SourceMicroservice
	Services      []wire.Service
}

// Target is what svcbridge holds.
type Target struct {
	Agents        []wire.Agent
	Microservices []wire.Microservice
	Services      []wire.Service
}

// Ports is an inclusive range of bridge ports (BRIDGE_PORTS_RANGE).
type Ports struct{ First, Last int }

// Contains reports whether p is in the range.
func (r Ports) Contains(p int) bool { return r.First <= p && p <= r.Last }

func (r Ports) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// ParsePorts reads "first-last", both inclusive, 1 <= first <= last <=
// 65535: BRIDGE_PORTS_RANGE's form (the server's setting reads it here
// too, so the import's --bridge-ports-range is read alike).
func ParsePorts(s string) (Ports, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return Ports{}, fmt.Errorf("%q is not a port range such as 10024-65535", s)
	}
	return Ports{First: first, Last: last}, nil
}

// Settings are the svcbridge server's (GET /api/v3/settings), which the
// mapping follows.
type Settings struct {
	// TagPrefix is its SERVICE_ANNOTATION_TAG.
	TagPrefix   string
	BridgePorts Ports
	// ControlPlane is its CONTROL_PLANE (placement rules, CheckService).
	ControlPlane service.ControlPlane
}

// Action is what the import does with an object.
type Action string

// Actions.
const (
	Create    Action = "create"
	Unchanged Action = "unchanged"
	// Conflict: svcbridge holds something else under the object's name or
	// uuid, or the object cannot be imported as it is; nothing is written.
	Conflict Action = "conflict"
	// Skip: the user skips it (--skip; Reason empty), or something it
	// needs (Reason says what, "agent Edge_5 is skipped").
	Skip Action = "skip"
	// Blocked: something it needs is not imported (Reason says what, by
	// name: "agent plant-b is in conflict").
	Blocked Action = "blocked"
)

// Agent is an agent as svcbridge is to hold it.
type Agent struct {
	UUID, Name, Host, RouterMode string
	DefaultRouter                bool
	Tags                         []string
	// UpstreamRouters are agent uuids. Later are those of them created
	// after this agent (a cycle of interior routers): the agent is created
	// without them and given them once every agent exists.
	UpstreamRouters, Later []string
}

// Microservice is a microservice as svcbridge is to hold it.
type Microservice struct {
	UUID, Application, Name, AgentUUID string
	HostNetworkMode                    bool
}

// Service is a service as svcbridge is to hold it: its spec, defaults
// applied (Spec.WithDefaults).
type Service = service.Spec

// Port is a service's bridge port: the source's and svcbridge's.
type Port struct {
	Source, Port int
	// Reason says why Port is not Source ("" when it is kept).
	Reason string
}

// Moved reports whether the service's port changes.
func (p Port) Moved() bool { return p.Port != p.Source }

// Head is what every step has, of any kind.
type Head struct {
	// Name is the object's name in svcbridge; From the source's, when
	// the user renamed it ("" otherwise).
	Name, From string
	Action     Action
	// Reason says why a Conflict, Skip or Blocked is one; Note adds what
	// the user should know of a Create or Unchanged.
	Reason, Note string
	// Needs are the objects of the source this one refers to that
	// svcbridge does not hold yet: they are created first, and when one
	// is not imported, neither is this.
	Needs []Need
}

// Step is one object of the plan.
type Step[T any] struct {
	Head
	Object T
}

// ServiceStep is a service's step, with its port (nil unless it is
// created or unchanged).
type ServiceStep struct {
	Step[Service]
	Port *Port
	// sourcePort is the source's bridge port.
	sourcePort int
}

// Plan is the import, in the order it is written: agents (each after its
// upstream routers), microservices, services, each by name otherwise.
type Plan struct {
	Agents        []Step[Agent]
	Microservices []Step[Microservice]
	Services      []ServiceStep
	// Notes say what applies to every object (the tag prefix).
	Notes []string

	// What CheckAgent and CheckService resolve references among (index).
	controlPlane       service.ControlPlane
	agents             map[string]inventory.Agent
	microserviceAgents map[string]string // microservice uuid -> agent uuid
	defaultRouter      string
}

// each calls f with the head of every step, and its kind, in plan order.
func (p *Plan) each(f func(kind string, h *Head)) {
	for i := range p.Agents {
		f(KindAgent, &p.Agents[i].Head)
	}
	for i := range p.Microservices {
		f(KindMicroservice, &p.Microservices[i].Head)
	}
	for i := range p.Services {
		f(KindService, &p.Services[i].Head)
	}
}

// MapTag is an agent tag of the source as svcbridge holds it: a tag of the
// reference's prefix ("service.datasance.com/tag: checkout") gets the
// installation's, so that it selects the same services; any other tag is
// kept as it is.
func MapTag(tag, prefix string) string {
	if rest, ok := strings.CutPrefix(tag, SourceTagPrefix); ok && strings.HasPrefix(rest, ":") {
		return prefix + rest
	}
	return tag
}

// tagNote says how agent tags are mapped, or that they are kept.
func tagNote(prefix string) string {
	if prefix == SourceTagPrefix {
		return fmt.Sprintf("agent tags %s: T are kept as they are (svcbridge's SERVICE_ANNOTATION_TAG is %s)", SourceTagPrefix, prefix)
	}
	return fmt.Sprintf("agent tags %s: T become %s: T (svcbridge's SERVICE_ANNOTATION_TAG); "+
		"to keep them as they are, run svcbridge with SERVICE_ANNOTATION_TAG=%s",
		SourceTagPrefix, prefix, SourceTagPrefix)
}

// NewPlan decides the import of src into dst, with the user's renames
// and skips (c, checked against src with Choices.Check).
func NewPlan(src Source, dst Target, s Settings, c Choices) Plan {
	src, from := c.rename(resolveRefs(src))
	r := newRefs(src, dst, from)
	p := Plan{Notes: []string{tagNote(s.TagPrefix)}}
	p.Agents = planAgents(src.Agents, dst.Agents, s.TagPrefix, r)
	p.Microservices = planMicroservices(src.Microservices, dst.Microservices, r)
	var book *portBook
	p.Services, book = planServices(src.Services, dst.Services, r, s.BridgePorts, hubNeed(p.Agents, dst.Agents, s.ControlPlane))
	p.each(func(kind string, h *Head) {
		h.From = from[Ref{kind, h.Name}]
		if c.Skips[Ref{kind, h.Name}] {
			h.Action, h.Reason, h.Note = Skip, "", ""
		}
	})
	p.passOn()
	book.move(p.Services)
	p.index(dst, s)
	return p
}

// refs says where the objects referred to are: svcbridge's by uuid, the
// source's by uuid with their names (in svcbridge); and the source's
// names of the renamed ones (from).
type refs struct {
	heldAgents, heldMicroservices map[string]bool
	agents, microservices         map[string]string
	from                          map[Ref]string
}

func newRefs(src Source, dst Target, from map[Ref]string) refs {
	r := refs{heldAgents: map[string]bool{}, heldMicroservices: map[string]bool{}, agents: map[string]string{}, microservices: map[string]string{}, from: from}
	for _, a := range dst.Agents {
		r.heldAgents[a.UUID] = true
	}
	for _, m := range dst.Microservices {
		r.heldMicroservices[m.UUID] = true
	}
	for _, a := range src.Agents {
		r.agents[a.UUID] = a.Name
	}
	for _, m := range src.Microservices {
		r.microservices[m.UUID] = m.Application + "/" + m.Name
	}
	return r
}

// need says what the agent or microservice uuid is to a step: needed
// (the source has it and svcbridge does not yet), held (svcbridge has
// it: nothing to wait for), or missing (neither has it).
func (r refs) need(kind, uuid string) (n *Need, missing bool) {
	held, names := r.heldAgents, r.agents
	if kind == KindMicroservice {
		held, names = r.heldMicroservices, r.microservices
	}
	if held[uuid] {
		return nil, false
	}
	name, ok := names[uuid]
	if !ok {
		return nil, true
	}
	return &Need{Ref: Ref{kind, name}, UUID: uuid}, false
}

// renamedHint is what a conflict over an object svcbridge holds by the
// step's uuid under another name adds: an earlier import may have renamed
// it, and the same --rename keeps it.
func (r refs) renamedHint(kind, name, held string) string {
	return fmt.Sprintf("svcbridge's %s %s has its uuid: if an earlier import renamed it, import with --rename %s=%s",
		kind, held, Ref{kind, cmp.Or(r.from[Ref{kind, name}], name)}.Flag(), held)
}

// resolveRefs returns src with the references it makes by name turned
// into the uuids they name, as the reference itself answers them and
// svcbridge stores them: upstream routers, a service's resource and
// defaultBridge. So a rename cannot break them.
func resolveRefs(src Source) Source {
	agents, microservices := map[string]string{}, map[string]string{}
	for _, a := range src.Agents {
		agents[a.Name] = a.UUID
	}
	for _, m := range src.Microservices {
		microservices[m.Application+"/"+m.Name] = m.UUID
	}
	uuidOf := func(names map[string]string, ref string) string { return cmp.Or(names[ref], ref) }
	out := Source{Agents: slices.Clone(src.Agents), Microservices: src.Microservices, Services: slices.Clone(src.Services)}
	for i := range out.Agents {
		a := &out.Agents[i]
		a.UpstreamRouters = slices.Clone(a.UpstreamRouters)
		for j, u := range a.UpstreamRouters {
			if u != DefaultRouterName {
				a.UpstreamRouters[j] = uuidOf(agents, u)
			}
		}
	}
	for i := range out.Services {
		svc := &out.Services[i]
		switch svc.Type {
		case service.TypeMicroservice:
			svc.Resource = uuidOf(microservices, svc.Resource)
		case service.TypeAgent:
			svc.Resource = uuidOf(agents, svc.Resource)
		}
		if svc.DefaultBridge != service.DefaultBridge {
			svc.DefaultBridge = uuidOf(agents, svc.DefaultBridge)
		}
	}
	return out
}

// ---- agents ----

func planAgents(src []SourceAgent, dst []wire.Agent, prefix string, r refs) []Step[Agent] {
	byUUID, byName := map[string]wire.Agent{}, map[string]wire.Agent{}
	var dstDefault *wire.Agent
	for i, a := range dst {
		byUUID[a.UUID], byName[a.Name] = a, a
		if a.DefaultRouter {
			dstDefault = &dst[i]
		}
	}
	// The reference's default router is its system agent's.
	var system []string
	for _, a := range src {
		if a.IsSystem {
			system = append(system, a.UUID)
		}
	}
	defaultRouter := ""
	if len(system) == 1 {
		defaultRouter = system[0]
	}

	var steps []Step[Agent]
	for _, a := range src {
		want := Agent{UUID: a.UUID, Name: a.Name, Host: a.Host, RouterMode: cmp.Or(a.RouterMode, "edge"),
			DefaultRouter: a.UUID == defaultRouter, Tags: []string{}, UpstreamRouters: []string{}}
		for _, t := range a.Tags {
			want.Tags = append(want.Tags, MapTag(t, prefix))
		}
		step := Step[Agent]{Head: Head{Name: a.Name}}
		for _, u := range a.UpstreamRouters {
			if u == DefaultRouterName && defaultRouter == "" {
				step.Note = "its upstream router default-router is no agent of the source (a Kubernetes hub) and is left out"
				continue
			}
			if u == DefaultRouterName {
				u = defaultRouter
			}
			want.UpstreamRouters = append(want.UpstreamRouters, u)
			// One svcbridge holds nor the source has: svcbridge refuses it.
			if n, _ := r.need(KindAgent, u); n != nil {
				step.Needs = append(step.Needs, *n)
			}
		}
		step.Object = want
		step.Action, step.Reason = agentAction(want, byUUID, byName, dstDefault, r)
		if a.IsSystem && len(system) > 1 {
			step.Action, step.Reason = Conflict, fmt.Sprintf("the source has %d system agents (%s): which one is the default router is unclear",
				len(system), strings.Join(system, ", "))
		}
		steps = append(steps, step)
	}
	return orderAgents(steps)
}

// agentAction compares a with what svcbridge holds under its uuid and name.
func agentAction(a Agent, byUUID, byName map[string]wire.Agent, dstDefault *wire.Agent, r refs) (Action, string) {
	if have, ok := byName[a.Name]; ok && have.UUID != a.UUID {
		return Conflict, fmt.Sprintf("svcbridge's agent %s has uuid %s, the source's %s", a.Name, have.UUID, a.UUID)
	}
	have, ok := byUUID[a.UUID]
	if !ok {
		if a.DefaultRouter && dstDefault != nil {
			return Conflict, fmt.Sprintf("it is the source's default router, and svcbridge's is %s", dstDefault.Name)
		}
		return Create, ""
	}
	switch {
	case have.Name != a.Name:
		return Conflict, r.renamedHint(KindAgent, a.Name, have.Name)
	case have.Host != a.Host:
		return Conflict, differs("host", have.Host, a.Host)
	case have.RouterMode != a.RouterMode:
		return Conflict, differs("routerMode", have.RouterMode, a.RouterMode)
	case have.DefaultRouter != a.DefaultRouter:
		return Conflict, differs("defaultRouter", strconv.FormatBool(have.DefaultRouter), strconv.FormatBool(a.DefaultRouter))
	case !sameSet(have.UpstreamRouters, a.UpstreamRouters):
		return Conflict, differs("upstreamRouters", strings.Join(have.UpstreamRouters, ","), strings.Join(a.UpstreamRouters, ","))
	case !sameSet(have.Tags, a.Tags):
		return Conflict, differs("tags", strings.Join(have.Tags, ", "), strings.Join(a.Tags, ", "))
	}
	return Unchanged, ""
}

func differs(field, have, want string) string {
	return fmt.Sprintf("svcbridge holds it with %s %q, the source with %q", field, have, want)
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// orderAgents puts each agent after its upstream routers (by name among
// those that are free to go); the agents of a cycle go by name, each
// created without the upstream routers that come after it (Later).
func orderAgents(steps []Step[Agent]) []Step[Agent] {
	slices.SortFunc(steps, func(a, b Step[Agent]) int { return strings.Compare(a.Name, b.Name) })
	inSource := map[string]bool{}
	for _, s := range steps {
		inSource[s.Object.UUID] = true
	}
	placed := map[string]bool{}
	out := make([]Step[Agent], 0, len(steps))
	for len(out) < len(steps) {
		next := -1
		for i, s := range steps {
			if placed[s.Object.UUID] {
				continue
			}
			if next < 0 {
				next = i // by name, when a cycle leaves no agent free
			}
			if !slices.ContainsFunc(s.Object.UpstreamRouters, func(u string) bool { return inSource[u] && !placed[u] }) {
				next = i
				break
			}
		}
		s := steps[next]
		a := &s.Object
		a.Later = nil
		for _, u := range a.UpstreamRouters {
			if inSource[u] && !placed[u] {
				a.Later = append(a.Later, u)
			}
		}
		placed[a.UUID] = true
		out = append(out, s)
	}
	return out
}

// ---- microservices ----

func planMicroservices(src []SourceMicroservice, dst []wire.Microservice, r refs) []Step[Microservice] {
	byUUID, byName := map[string]wire.Microservice{}, map[string]wire.Microservice{}
	for _, m := range dst {
		byUUID[m.UUID], byName[m.Application+"/"+m.Name] = m, m
	}
	var steps []Step[Microservice]
	for _, m := range src {
		want := Microservice{UUID: m.UUID, Application: m.Application, Name: m.Name, AgentUUID: m.AgentUUID, HostNetworkMode: m.HostNetworkMode}
		name := m.Application + "/" + m.Name
		step := Step[Microservice]{Head: Head{Name: name, Action: Create}, Object: want}
		have, held := byUUID[m.UUID]
		need, missing := r.need(KindAgent, m.AgentUUID)
		switch other, taken := byName[name]; {
		case taken && other.UUID != m.UUID:
			step.Action, step.Reason = Conflict, fmt.Sprintf("svcbridge's microservice %s has uuid %s, the source's %s", name, other.UUID, m.UUID)
		case m.AgentUUID == "":
			step.Action, step.Reason = Conflict, "it runs on no agent in the source"
		case missing:
			step.Action, step.Reason = Conflict, fmt.Sprintf("its agent %s is neither in the source nor in svcbridge", m.AgentUUID)
		case !held:
			if need != nil {
				step.Needs = []Need{*need}
			}
		case have.Application != want.Application || have.Name != want.Name:
			step.Action, step.Reason = Conflict, r.renamedHint(KindMicroservice, name, have.Application+"/"+have.Name)
		case have.Agent != want.AgentUUID:
			step.Action, step.Reason = Conflict, differs("agent", have.Agent, want.AgentUUID)
		case have.HostNetworkMode != want.HostNetworkMode:
			step.Action, step.Reason = Conflict, differs("hostNetworkMode", strconv.FormatBool(have.HostNetworkMode), strconv.FormatBool(want.HostNetworkMode))
		default:
			step.Action = Unchanged
		}
		steps = append(steps, step)
	}
	slices.SortFunc(steps, func(a, b Step[Microservice]) int { return strings.Compare(a.Name, b.Name) })
	return steps
}

// ---- services ----

func planServices(src, dst []wire.Service, r refs, ports Ports, hub *Need) ([]ServiceStep, *portBook) {
	src = slices.SortedFunc(slices.Values(src), func(a, b wire.Service) int { return strings.Compare(a.Name, b.Name) })
	have := map[string]wire.Service{}
	book := &portBook{ports: ports, owner: map[int]string{}, heldBy: map[int]string{}, used: map[int]bool{}}
	for _, s := range dst {
		have[s.Name] = s
		book.heldBy[s.BridgePort] = s.Name
		book.used[s.BridgePort] = true
	}
	// Of the source's services that share a port, the one svcbridge holds
	// on it keeps it, else the first by name.
	for _, s := range src {
		if h, ok := have[s.Name]; ok && h.BridgePort == s.BridgePort {
			book.owner[s.BridgePort] = s.Name
		}
	}
	for _, s := range src {
		if _, ok := book.owner[s.BridgePort]; !ok {
			book.owner[s.BridgePort] = s.Name
		}
		// No service moves to a port of the source's: the one that keeps
		// it may be imported later (it waits in conflict, or is skipped).
		book.used[s.BridgePort] = true
	}

	steps := make([]ServiceStep, len(src))
	for i, s := range src {
		want := Service{Name: s.Name, Type: s.Type, Resource: s.Resource, DefaultBridge: s.DefaultBridge,
			TargetPort: s.TargetPort, Tags: append([]string{}, s.Tags...), ServicePort: s.ServicePort, K8sType: s.K8sType}.WithDefaults()
		steps[i] = ServiceStep{Step: Step[Service]{Head: Head{Name: s.Name}, Object: want}, sourcePort: s.BridgePort}
		step := &steps[i]
		move := book.moveReason(s.Name, s.BridgePort)
		if h, ok := have[s.Name]; ok {
			step.Action, step.Reason = serviceAction(want, h)
			if step.Action == Unchanged {
				step.Port = &Port{Source: s.BridgePort, Port: h.BridgePort, Reason: cmp.Or(move, "svcbridge holds it on that port")}
				if !step.Port.Moved() {
					step.Port.Reason = ""
				}
			}
			continue
		}
		step.Action = Create
		step.Needs, step.Reason = serviceNeeds(want, r, hub)
		if step.Reason != "" {
			step.Action = Conflict
		} else if move == "" {
			step.Port = &Port{Source: s.BridgePort, Port: s.BridgePort}
		}
	}
	return steps, book
}

// portBook decides the services' bridge ports.
type portBook struct {
	ports Ports
	// owner: of the source's services that share a port, the one that
	// keeps it; heldBy: svcbridge's services, by port.
	owner, heldBy map[int]string
	// used are the ports no service may move to: svcbridge's, the
	// source's, and those given.
	used map[int]bool
}

// moveReason says why the source's service name must move from port, ""
// when it keeps it.
func (b *portBook) moveReason(name string, port int) string {
	switch {
	case !b.ports.Contains(port):
		return fmt.Sprintf("outside BRIDGE_PORTS_RANGE %s", b.ports)
	case b.owner[port] != name:
		return "shared with " + b.owner[port]
	case b.heldBy[port] != "" && b.heldBy[port] != name:
		return "taken in svcbridge by " + b.heldBy[port]
	}
	return ""
}

// move gives each service created that must move a port, from the top of
// BRIDGE_PORTS_RANGE down: the reference hands out the lowest port its
// services leave free (reference-controller.md §4), so while it stays in
// use its next services take ports from the bottom, which svcbridge keeps
// for them, and a later import keeps their ports and moves none again.
// A step that is not created or unchanged gets no port.
func (b *portBook) move(steps []ServiceStep) {
	next := b.ports.Last
	for i := range steps {
		step := &steps[i]
		switch {
		case step.Action != Create && step.Action != Unchanged:
			step.Port = nil
			continue
		case step.Port != nil:
			continue
		}
		for next >= b.ports.First && b.used[next] {
			next--
		}
		reason := b.moveReason(step.Name, step.sourcePort)
		if next < b.ports.First {
			step.Action, step.Reason = Conflict, fmt.Sprintf("its bridgePort %d must move (%s) and no port of BRIDGE_PORTS_RANGE %s is free", step.sourcePort, reason, b.ports)
			continue
		}
		step.Port = &Port{Source: step.sourcePort, Port: next, Reason: reason}
		b.used[next] = true
	}
}

// hubNeed is the default router a service on the remote control plane
// needs (its hub), when the plan creates it: svcbridge holds none, and the
// source's system agent becomes it.
func hubNeed(agents []Step[Agent], dst []wire.Agent, cp service.ControlPlane) *Need {
	if cp.Kubernetes() || slices.ContainsFunc(dst, func(a wire.Agent) bool { return a.DefaultRouter }) {
		return nil
	}
	for _, a := range agents {
		if a.Object.DefaultRouter {
			return &Need{Ref: Ref{KindAgent, a.Name}, UUID: a.Object.UUID, DefaultRouter: true}
		}
	}
	return nil
}

// serviceNeeds says what s needs that the plan creates, or why svcbridge
// could not hold it: its backend or bridge agent is neither in the source
// nor in svcbridge.
func serviceNeeds(s Service, r refs, hub *Need) ([]Need, string) {
	var needs []Need
	add := func(what, kind, uuid string) string {
		n, missing := r.need(kind, uuid)
		if missing {
			return fmt.Sprintf("its %s %s is neither in the source nor in svcbridge", what, uuid)
		}
		if n != nil {
			needs = append(needs, *n)
		}
		return ""
	}
	var reasons []string
	switch s.Type {
	case service.TypeMicroservice:
		reasons = append(reasons, add("microservice", KindMicroservice, s.Resource))
	case service.TypeAgent:
		reasons = append(reasons, add("agent", KindAgent, s.Resource))
	}
	if s.DefaultBridge != service.DefaultBridge {
		reasons = append(reasons, add("defaultBridge", KindAgent, s.DefaultBridge))
	}
	if hub != nil && (s.DefaultBridge == service.DefaultBridge || service.ConnectorOnHub(s.Type)) {
		needs = append(needs, *hub)
	}
	return needs, cmp.Or(reasons...)
}

// serviceAction compares want with the service svcbridge holds under its
// name. servicePort and k8sType count where svcbridge keeps them (the
// Kubernetes control plane, where k8sType is set).
func serviceAction(want Service, h wire.Service) (Action, string) {
	switch {
	case h.Type != want.Type:
		return Conflict, differs("type", h.Type, want.Type)
	case h.Resource != want.Resource:
		return Conflict, differs("resource", h.Resource, want.Resource)
	case h.TargetPort != want.TargetPort:
		return Conflict, differs("targetPort", strconv.Itoa(h.TargetPort), strconv.Itoa(want.TargetPort))
	case h.DefaultBridge != want.DefaultBridge:
		return Conflict, differs("defaultBridge", h.DefaultBridge, want.DefaultBridge)
	case !sameSet(h.Tags, want.Tags):
		return Conflict, differs("tags", strings.Join(h.Tags, ", "), strings.Join(want.Tags, ", "))
	case h.K8sType != nil && (want.K8sType == nil || *h.K8sType != *want.K8sType):
		return Conflict, differs("k8sType", *h.K8sType, deref(want.K8sType))
	case h.K8sType != nil && h.ServicePort != nil && (want.ServicePort == nil || *h.ServicePort != *want.ServicePort):
		return Conflict, differs("servicePort", strconv.Itoa(*h.ServicePort), strconv.Itoa(derefInt(want.ServicePort)))
	}
	return Unchanged, ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(i *int) int {
	if i == nil {
		return 0
	}
	return *i
}
