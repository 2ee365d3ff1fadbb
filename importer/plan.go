// Package importer decides how a running ioFog controller's agents,
// microservices and services become svcbridge's (`svcbridge import`): given
// what was read from the source and what svcbridge holds, Plan says per
// object whether it is created, unchanged or in conflict, and per service
// which bridge port it gets and why. Pure: the CLI reads and writes.
package importer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// Settings are the installation's, which the mapping follows.
type Settings struct {
	// TagPrefix is its SERVICE_ANNOTATION_TAG.
	TagPrefix   string
	BridgePorts Ports
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

// Step is one object of the plan.
type Step[T any] struct {
	Name   string
	Action Action
	// Reason says why a Conflict is one; Note adds what the user should
	// know of a Create or Unchanged.
	Reason, Note string
	Object       T
}

// ServiceStep is a service's step, with its port (nil for a conflict).
type ServiceStep struct {
	Step[Service]
	Port *Port
}

// Plan is the import, in the order it is written: agents (each after its
// upstream routers), microservices, services, each by name otherwise.
type Plan struct {
	Agents        []Step[Agent]
	Microservices []Step[Microservice]
	Services      []ServiceStep
	// Notes say what applies to every object (the tag prefix).
	Notes []string
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
		return fmt.Sprintf("agent tags %s: T are kept as they are (the installation's SERVICE_ANNOTATION_TAG is %s)", SourceTagPrefix, prefix)
	}
	return fmt.Sprintf("agent tags %s: T become %s: T (the installation's SERVICE_ANNOTATION_TAG); "+
		"to keep them as they are, run svcbridge with SERVICE_ANNOTATION_TAG=%s and import with --tag-prefix %s",
		SourceTagPrefix, prefix, SourceTagPrefix, SourceTagPrefix)
}

// NewPlan decides the import of src into dst.
func NewPlan(src Source, dst Target, s Settings) Plan {
	p := Plan{Notes: []string{tagNote(s.TagPrefix)}}
	p.Agents = planAgents(src.Agents, dst.Agents, s.TagPrefix)
	known := map[string]bool{} // agent uuids svcbridge will hold
	for _, a := range dst.Agents {
		known[a.UUID] = true
	}
	for _, a := range p.Agents {
		if a.Action != Conflict {
			known[a.Object.UUID] = true
		}
	}
	p.Microservices = planMicroservices(src.Microservices, dst.Microservices, known)
	microservices := map[string]bool{}
	for _, m := range dst.Microservices {
		microservices[m.UUID] = true
	}
	for _, m := range p.Microservices {
		if m.Action != Conflict {
			microservices[m.Object.UUID] = true
		}
	}
	p.Services = planServices(src.Services, dst.Services, known, microservices, s.BridgePorts)
	return p
}

// ---- agents ----

func planAgents(src []SourceAgent, dst []wire.Agent, prefix string) []Step[Agent] {
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
		step := Step[Agent]{Name: a.Name, Object: want}
		for _, u := range a.UpstreamRouters {
			if u != DefaultRouterName {
				want.UpstreamRouters = append(want.UpstreamRouters, u)
			} else if defaultRouter != "" {
				want.UpstreamRouters = append(want.UpstreamRouters, defaultRouter)
			} else {
				step.Note = "its upstream router default-router is no agent of the source (a Kubernetes hub) and is left out"
			}
		}
		step.Object = want
		step.Action, step.Reason = agentAction(want, byUUID, byName, dstDefault)
		if a.IsSystem && len(system) > 1 {
			step.Action, step.Reason = Conflict, fmt.Sprintf("the source has %d system agents (%s): which one is the default router is unclear",
				len(system), strings.Join(system, ", "))
		}
		steps = append(steps, step)
	}
	return orderAgents(steps)
}

// agentAction compares a with what svcbridge holds under its uuid and name.
func agentAction(a Agent, byUUID, byName map[string]wire.Agent, dstDefault *wire.Agent) (Action, string) {
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
		return Conflict, fmt.Sprintf("svcbridge's agent %s has its uuid", have.Name)
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

func planMicroservices(src []SourceMicroservice, dst []wire.Microservice, agents map[string]bool) []Step[Microservice] {
	byUUID, byName := map[string]wire.Microservice{}, map[string]wire.Microservice{}
	for _, m := range dst {
		byUUID[m.UUID], byName[m.Application+"/"+m.Name] = m, m
	}
	var steps []Step[Microservice]
	for _, m := range src {
		want := Microservice{UUID: m.UUID, Application: m.Application, Name: m.Name, AgentUUID: m.AgentUUID, HostNetworkMode: m.HostNetworkMode}
		name := m.Application + "/" + m.Name
		step := Step[Microservice]{Name: name, Object: want, Action: Create}
		have, held := byUUID[m.UUID]
		switch other, taken := byName[name]; {
		case taken && other.UUID != m.UUID:
			step.Action, step.Reason = Conflict, fmt.Sprintf("svcbridge's microservice %s has uuid %s, the source's %s", name, other.UUID, m.UUID)
		case m.AgentUUID == "":
			step.Action, step.Reason = Conflict, "it runs on no agent in the source"
		case !agents[m.AgentUUID]:
			step.Action, step.Reason = Conflict, fmt.Sprintf("its agent %s is neither in the source nor in svcbridge", m.AgentUUID)
		case !held:
		case have.Application != want.Application || have.Name != want.Name:
			step.Action, step.Reason = Conflict, fmt.Sprintf("svcbridge's microservice %s/%s has its uuid", have.Application, have.Name)
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

func planServices(src, dst []wire.Service, agents, microservices map[string]bool, ports Ports) []ServiceStep {
	src = slices.SortedFunc(slices.Values(src), func(a, b wire.Service) int { return strings.Compare(a.Name, b.Name) })
	have := map[string]wire.Service{}
	heldBy := map[int]string{} // svcbridge's ports
	for _, s := range dst {
		have[s.Name] = s
		heldBy[s.BridgePort] = s.Name
	}
	// Of the source's services that share a port, the one svcbridge holds
	// on it keeps it, else the first by name.
	owner := map[int]string{}
	for _, s := range src {
		if h, ok := have[s.Name]; ok && h.BridgePort == s.BridgePort {
			owner[s.BridgePort] = s.Name
		}
	}
	for _, s := range src {
		if _, ok := owner[s.BridgePort]; !ok {
			owner[s.BridgePort] = s.Name
		}
	}
	moveReason := func(s wire.Service) string {
		switch p := s.BridgePort; {
		case !ports.Contains(p):
			return fmt.Sprintf("outside BRIDGE_PORTS_RANGE %s", ports)
		case owner[p] != s.Name:
			return "shared with " + owner[p]
		case heldBy[p] != "" && heldBy[p] != s.Name:
			return "taken in svcbridge by " + heldBy[p]
		}
		return ""
	}

	steps := make([]ServiceStep, len(src))
	used := map[int]bool{} // ports svcbridge holds or the plan gives
	for p := range heldBy {
		used[p] = true
	}
	for i, s := range src {
		want := Service{Name: s.Name, Type: s.Type, Resource: s.Resource, DefaultBridge: s.DefaultBridge,
			TargetPort: s.TargetPort, Tags: append([]string{}, s.Tags...), ServicePort: s.ServicePort, K8sType: s.K8sType}.WithDefaults()
		steps[i] = ServiceStep{Step: Step[Service]{Name: s.Name, Object: want}}
		step := &steps[i]
		if h, ok := have[s.Name]; ok {
			step.Action, step.Reason = serviceAction(want, h)
			if step.Action == Unchanged {
				step.Port = &Port{Source: s.BridgePort, Port: h.BridgePort, Reason: cmp.Or(moveReason(s), "svcbridge holds it on that port")}
				if !step.Port.Moved() {
					step.Port.Reason = ""
				}
			}
			continue
		}
		// A port the service keeps stays its own while it waits in
		// conflict too: a later import must not find it given away.
		keeps := moveReason(s) == ""
		if keeps {
			used[s.BridgePort] = true
		}
		if reason := dependencyConflict(want, agents, microservices); reason != "" {
			step.Action, step.Reason = Conflict, reason
			continue
		}
		step.Action = Create
		if keeps {
			step.Port = &Port{Source: s.BridgePort, Port: s.BridgePort}
		}
	}
	// Then the ports that move, to the first ports nothing holds or keeps.
	next := ports.First
	for i, s := range src {
		step := &steps[i]
		if step.Action != Create || step.Port != nil {
			continue
		}
		for next <= ports.Last && used[next] {
			next++
		}
		if next > ports.Last {
			step.Action, step.Reason = Conflict, fmt.Sprintf("its bridgePort %d must move (%s) and no port of BRIDGE_PORTS_RANGE %s is free", s.BridgePort, moveReason(s), ports)
			continue
		}
		step.Port = &Port{Source: s.BridgePort, Port: next, Reason: moveReason(s)}
		used[next] = true
	}
	return steps
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

// dependencyConflict says why svcbridge could not hold s: its backend or
// bridge agent is neither in the source nor in svcbridge.
func dependencyConflict(s Service, agents, microservices map[string]bool) string {
	switch {
	case s.Type == "microservice" && !microservices[s.Resource]:
		return fmt.Sprintf("its microservice %s is neither in the source nor in svcbridge", s.Resource)
	case s.Type == "agent" && !agents[s.Resource]:
		return fmt.Sprintf("its agent %s is neither in the source nor in svcbridge", s.Resource)
	case s.DefaultBridge != service.DefaultBridge && !agents[s.DefaultBridge]:
		return fmt.Sprintf("its defaultBridge %s is neither in the source nor in svcbridge", s.DefaultBridge)
	}
	return ""
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
