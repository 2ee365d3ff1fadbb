package api

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/wire"
)

// Distribution visibility (issue 5): which agents listen for a service and
// whether they applied it, what an agent listens for and why, and a
// preview of which agents a set of service tags would reach. Every answer
// uses the one tag rule (service.TagRule) the reconciles use.

// hubAgent returns the agent svc's placement puts its hub listener on;
// nil on a Kubernetes control plane (the hub is the ConfigMap) and when
// the placement is invalid.
func hubAgent(ctx context.Context, tx *store.Tx, svc service.Service) (*inventory.Agent, error) {
	if svc.Placement.HubSite == "" {
		return nil, nil
	}
	hub, err := tx.AgentByUUID(ctx, svc.Placement.HubSite)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &hub, nil
}

// serviceDistribution lists the agents that listen for svc and those its
// current tags select, by agent name.
func (s *Server) serviceDistribution(ctx context.Context, tx *store.Tx, svc service.Service) ([]wire.DistributionEntry, error) {
	by := map[string]*wire.DistributionEntry{}
	// A deleted service is wanted nowhere; only the listeners left show.
	if svc.ProvisioningStatus != service.StatusDeleting {
		selected, err := tx.AgentsSelectedBy(ctx, s.Tags.SelectingAgentTags(svc.Tags))
		if err != nil {
			return nil, err
		}
		hub, err := hubAgent(ctx, tx, svc)
		if err != nil {
			return nil, err
		}
		for _, a := range selected {
			reason := s.Tags.ListenReason(a.Tags, svc.Tags, hub != nil && a.UUID == hub.UUID)
			by[a.UUID] = &wire.DistributionEntry{Agent: a.UUID, AgentName: a.Name, Wanted: new(true), Reason: reason}
		}
		if hub != nil && by[hub.UUID] == nil {
			reason := s.Tags.ListenReason(hub.Tags, svc.Tags, true)
			by[hub.UUID] = &wire.DistributionEntry{Agent: hub.UUID, AgentName: hub.Name, Wanted: new(true), Reason: reason}
		}
	}
	listening, err := tx.ServiceListeners(ctx, svc.Name)
	if err != nil {
		return nil, err
	}
	reports, err := listenerReports(ctx, tx, listening)
	if err != nil {
		return nil, err
	}
	for _, l := range listening {
		e := by[l.Agent]
		if e == nil {
			e = &wire.DistributionEntry{Agent: l.Agent, AgentName: l.AgentName, Wanted: new(false)}
			by[l.Agent] = e
		}
		e.Listening = true
		e.WrittenAt = (*wire.Time)(&l.WrittenAt)
		e.AcknowledgedAt = (*wire.Time)(l.AcknowledgedAt)
		e.Rollout, e.RolloutReason = rollout(l, reports)
	}
	out := make([]wire.DistributionEntry, 0, len(by))
	for _, e := range by {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentName < out[j].AgentName })
	return out, nil
}

// listenerReports reads the router sides' reports of the agents whose
// routers hold listeners.
func listenerReports(ctx context.Context, tx *store.Tx, listeners []store.ListenerEntry) (map[string]store.RouterReport, error) {
	agents := make([]string, 0, len(listeners))
	for _, l := range listeners {
		agents = append(agents, l.Agent)
	}
	return tx.RouterReports(ctx, distinct(agents))
}

// rollout is how far a listener has got on its agent's router
// (routerconfig.Rollout).
func rollout(l store.ListenerEntry, reports map[string]store.RouterReport) (string, string) {
	var report *wire.RouterReport
	if r, ok := reports[l.Agent]; ok {
		rr := r.Report()
		report = &rr
	}
	return routerconfig.Rollout(routerconfig.EntityTCPListener, routerconfig.ListenerName(l.Service), l.Acknowledged(), report)
}

func (s *Server) getAgentServices(c *gin.Context) {
	out, ok := read(s, c, func(tx *store.Tx, ctx context.Context) ([]wire.AgentService, error) {
		a, err := findAgent(ctx, tx, c.Param("agent"))
		if err != nil {
			return nil, err
		}
		return s.agentServices(ctx, tx, a)
	})
	if ok {
		c.JSON(http.StatusOK, out)
	}
}

// agentServices lists what a's router listens for, and what its tags (or
// its hub role) select, by service.
func (s *Server) agentServices(ctx context.Context, tx *store.Tx, a inventory.Agent) ([]wire.AgentService, error) {
	by := map[string]*wire.AgentService{}
	if a.HasRouter() {
		tokens, all := s.Tags.AgentTokens(a.Tags)
		wanted, err := tx.ListenerServices(ctx, a.UUID, tokens, all, "")
		if err != nil {
			return nil, err
		}
		var plain []string
		for _, t := range tokens {
			if t != service.AllToken {
				plain = append(plain, t)
			}
		}
		carried, err := tx.ServicesWithTags(ctx, plain)
		if err != nil {
			return nil, err
		}
		for _, w := range wanted {
			// Of the service's tags, only those a's tokens name can make
			// a's tags select it: carried holds those.
			reason := s.Tags.ListenReason(a.Tags, carried[w.Service], w.Hub)
			port := w.BridgePort
			by[w.Service] = &wire.AgentService{Service: w.Service, BridgePort: &port, Reason: reason, Wanted: new(true)}
		}
	}
	listening, err := tx.AgentListeners(ctx, a.UUID)
	if err != nil {
		return nil, err
	}
	reports, err := listenerReports(ctx, tx, listening)
	if err != nil {
		return nil, err
	}
	for _, l := range listening {
		e := by[l.Service]
		if e == nil {
			e = &wire.AgentService{Service: l.Service, BridgePort: l.BridgePort, Wanted: new(false)}
			by[l.Service] = e
		}
		e.Listening = true
		e.WrittenAt = (*wire.Time)(&l.WrittenAt)
		e.Acknowledged, e.AcknowledgedAt = l.Acknowledged(), (*wire.Time)(l.AcknowledgedAt)
		e.Rollout, e.RolloutReason = rollout(l, reports)
	}
	out := make([]wire.AgentService, 0, len(by))
	for _, e := range by {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out, nil
}

// Reason codes the preview adds to service.TagRule.Explain's.
const (
	reasonRouterModeNone service.ReasonCode = "router-mode-none"
	reasonHub            service.ReasonCode = "hub"
	reasonNoTags         service.ReasonCode = "no-tags"
)

// previewTags reads ?tags=a,b: absent means the service's own tags; empty
// means no tags. Repeated parameters add up. The tags obey the rule a
// service's own do (service.CheckTags: a repeated, blank or too long tag
// is refused, not folded: the preview answers for what a PATCH could
// store); at most service.MaxTags, counted before splitting, so the whole
// is linear in the length of the query. Tags are taken as written (the
// rule trims nothing).
func previewTags(c *gin.Context) (tags []string, given bool, err error) {
	values, ok := c.GetQueryArray("tags")
	if !ok {
		return nil, false, nil
	}
	n := 0
	for _, v := range values {
		n += strings.Count(v, ",") + 1
	}
	if n > service.MaxTags {
		return nil, true, badRequest("Query parameter 'tags' lists %d tags, more than the limit of %d", n, service.MaxTags)
	}
	out := make([]string, 0, n)
	for _, v := range values {
		if v != "" {
			out = append(out, strings.Split(v, ",")...)
		}
	}
	if err := service.CheckTags(out); err != nil {
		return nil, true, badRequest("Query parameter 'tags': %v", err)
	}
	return out, true, nil
}

// previewDistribution answers which agents would listen for a service with
// the given tags, and for each agent why or why not. Nothing is written.
func (s *Server) previewDistribution(c *gin.Context) {
	name := c.Param("name")
	ctx := c.Request.Context()
	tags, given, err := previewTags(c)
	if err != nil {
		fail(c, err)
		return
	}
	var out wire.DistributionPreview
	err = s.readTx(c, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return serviceNotFound(name)
		}
		if err != nil {
			return err
		}
		if !given {
			tags = svc.Tags
		}
		out = wire.DistributionPreview{Service: name, Tags: tags, IgnoredTags: []string{}, Agents: []wire.PreviewAgent{}}
		for _, t := range tags {
			if !service.IsDistributionToken(t) {
				out.IgnoredTags = append(out.IgnoredTags, t)
			}
		}
		hubUUID := svc.Placement.HubSite
		listening, err := tx.ServiceListeners(ctx, name)
		if err != nil {
			return err
		}
		now := map[string]bool{}
		for _, l := range listening {
			now[l.Agent] = true
		}
		agents, err := tx.ListAgents(ctx)
		if err != nil {
			return err
		}
		for _, a := range agents {
			out.Agents = append(out.Agents, s.previewAgent(a, tags, a.UUID == hubUUID, now[a.UUID]))
		}
		return nil
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// previewAgent explains a's part in a preview of the tags: each of its
// tags (service.TagRule.Explain), then its hub role, routerMode none, or
// the absence of tags.
func (s *Server) previewAgent(a inventory.Agent, tags []string, hub, listening bool) wire.PreviewAgent {
	e := s.Tags.Explain(a.Tags, tags)
	p := wire.PreviewAgent{Agent: a.UUID, AgentName: a.Name, RouterMode: a.RouterMode, Listening: listening,
		Reasons: make([]wire.Reason, 0, len(e.Tags))}
	for _, r := range e.Tags {
		p.Reasons = append(p.Reasons, wire.Reason{AgentTag: r.AgentTag, Code: string(r.Code), Token: r.Token, Message: r.Message})
	}
	if len(a.Tags) == 0 {
		p.Reasons = append(p.Reasons, wire.Reason{Code: string(reasonNoTags), Message: "the agent has no tags"})
	}
	if hub {
		p.Reasons = append(p.Reasons, wire.Reason{Code: string(reasonHub),
			Message: "its router holds the service's hub listener, whatever the tags"})
	}
	if !a.HasRouter() {
		p.Reasons = append(p.Reasons, wire.Reason{Code: string(reasonRouterModeNone),
			Message: "routerMode none: the agent has no router, so it gets no listeners"})
		return p
	}
	p.WouldListen = e.Selected || hub
	return p
}
