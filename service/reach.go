package service

import (
	"maps"
	"slices"
)

// Written is one object svcbridge recorded writing into an agent's router
// config: a tcpConnector, or else a tcpListener.
type Written struct {
	Agent     string
	Connector bool
}

// Reach is which routers one reconcile pass of a service touches.
type Reach struct {
	// Sites hold (or held) its connector and hub listener: the pass
	// rebuilds them itself, before it records the outcome.
	Sites []string
	// Fanout are the other agents whose listeners may change (those its
	// tags select and those that listen now): they are queued.
	Fanout []string
}

// PassReach decides a pass's reach from where the service's objects are
// written now, its placement (nil when the service is deleted) and the
// agents its tags select. A router that held the connector is a site
// until a pass has removed it from there.
func PassReach(written []Written, p *Placement, selecting []string) Reach {
	sites := map[string]bool{}
	fanout := map[string]bool{}
	for _, w := range written {
		if w.Connector {
			sites[w.Agent] = true
		} else {
			fanout[w.Agent] = true
		}
	}
	if p != nil {
		for _, u := range []string{p.ConnectorSite, p.HubSite} {
			if u != "" {
				sites[u] = true
			}
		}
		for _, u := range selecting {
			fanout[u] = true
		}
	}
	for u := range sites {
		delete(fanout, u)
	}
	return Reach{Sites: slices.Sorted(maps.Keys(sites)), Fanout: slices.Sorted(maps.Keys(fanout))}
}

// MissingObject says which object a placed service lacks for ready
// (design decision 7: ready needs the connector and the hub listener
// written, as recorded, not as planned); "" when none.
func MissingObject(written []Written, connectorSite, hubSite string) string {
	has := func(agent string, connector bool) bool {
		return slices.Contains(written, Written{Agent: agent, Connector: connector})
	}
	if connectorSite != "" && !has(connectorSite, true) {
		return "the tcpConnector is not on the router of agent " + connectorSite
	}
	if hubSite != "" && !has(hubSite, false) {
		return "the hub tcpListener is not on the router of agent " + hubSite
	}
	return ""
}
