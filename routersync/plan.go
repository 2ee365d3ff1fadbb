package routersync

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"svcbridge/routerconfig"
)

// Types the sync creates and deletes at run time, by source: an agent's
// router document brings its bridges and its links to upstream routers; the
// Kubernetes hub file only bridges (the rest of that file is the router's
// start-up configuration, mounted from the same ConfigMap).
var (
	AgentTypes = []string{routerconfig.EntityTCPListener, routerconfig.EntityTCPConnector, routerconfig.EntityConnector}
	HubTypes   = []string{routerconfig.EntityTCPListener, routerconfig.EntityTCPConnector}
)

// Plan is what to do on a router: deletes first (they free ports and
// names), then creates. A changed entity is deleted and created again:
// the router cannot update port, host or address.
type Plan struct {
	Deletes []routerconfig.Entity
	Creates []routerconfig.Entity
	// Restart says why the running router differs from the document in
	// what only a restart from the start-up file changes (its id, mode or
	// own listeners); empty when it does not.
	Restart []string
}

// Owns reports whether the sync may delete a router's entity that the
// document does not hold: one it applied before (previous, by key), or a
// bridge named as svcbridge names them (seed 001's "-listener" rule, and
// "-connector"). Everything else on the router is someone else's.
func Owns(e routerconfig.Entity, previous map[string]bool) bool {
	if previous[e.Key()] {
		return true
	}
	switch e.Type {
	case routerconfig.EntityTCPListener:
		return strings.HasSuffix(e.Name, routerconfig.ListenerSuffix)
	case routerconfig.EntityTCPConnector:
		return strings.HasSuffix(e.Name, routerconfig.ConnectorSuffix)
	}
	return false
}

// Failed is what a router says of a bridge it holds but cannot serve: a
// tcpListener whose socket failed (its port taken on the host) reports
// operStatus down with the error in connectionMsg. "" when it serves (a
// listener without a connector anywhere in the network is down without a
// message: its port opens when one appears).
func Failed(current routerconfig.Entity) string {
	if current.Type != routerconfig.EntityTCPListener {
		return ""
	}
	msg, _ := current.Attrs["connectionMsg"].(string)
	if status, _ := current.Attrs["operStatus"].(string); status == "up" {
		return ""
	}
	return msg
}

// PlanApply compares what a router should hold (desired, every entity of
// its document) with what it holds (current, as its management lists
// them) for the types the sync manages: an entity missing is created, one
// that differs (or, with retry, failed: Failed) is deleted and created
// again, and one
// the sync owns (Owns) that the document no longer holds is deleted. The
// router entity and its listeners are compared only to say whether a
// restart is due.
func PlanApply(desired, current []routerconfig.Entity, types []string, previous map[string]bool, retry bool) Plan {
	var p Plan
	have := map[string]routerconfig.Entity{}
	for _, c := range current {
		have[c.Key()] = c
	}
	want := map[string]bool{}
	for _, d := range desired {
		want[d.Key()] = true
		c, ok := have[d.Key()]
		switch {
		case d.Type == routerconfig.EntityRouter:
			p.Restart = append(p.Restart, routerDiffers(d, current)...)
		case d.Type == routerconfig.EntityListener:
			if !ok || !d.Same(c) {
				p.Restart = append(p.Restart, "listener "+d.Name+" differs from the document")
			}
		case !slices.Contains(types, d.Type):
		case !ok:
			p.Creates = append(p.Creates, d)
		case !d.Same(c) || retry && Failed(c) != "":
			p.Deletes = append(p.Deletes, c)
			p.Creates = append(p.Creates, d)
		}
	}
	for _, c := range current {
		if slices.Contains(types, c.Type) && !want[c.Key()] && Owns(c, previous) {
			p.Deletes = append(p.Deletes, c)
		}
	}
	slices.SortFunc(p.Deletes, byKey)
	slices.SortFunc(p.Creates, byKey)
	slices.Sort(p.Restart)
	p.Restart = slices.Compact(p.Restart)
	return p
}

// routerDiffers says how the running router's id and mode differ from
// the document's router entity d.
func routerDiffers(d routerconfig.Entity, current []routerconfig.Entity) []string {
	var running routerconfig.Entity
	for _, c := range current {
		if c.Type == routerconfig.EntityRouter {
			running = c
		}
	}
	var out []string
	for _, k := range []string{"id", "mode"} {
		if v, set := d.Attrs[k]; set && fmt.Sprint(running.Attrs[k]) != fmt.Sprint(v) {
			out = append(out, fmt.Sprintf("the router's %s is %v, the document's %v", k, running.Attrs[k], v))
		}
	}
	return out
}

func byKey(a, b routerconfig.Entity) int { return strings.Compare(a.Key(), b.Key()) }

// Localize points the router's management listener (a listener with role
// normal) of an agent's document at addr (host:port), where its router
// side reaches it: the one part of a router's configuration that is the
// host's business, not svcbridge's (a port 5672 taken there by another
// broker, say). Other entities are returned as they are.
func Localize(entities []routerconfig.Entity, addr string) []routerconfig.Entity {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return entities
	}
	out := make([]routerconfig.Entity, len(entities))
	for i, e := range entities {
		if e.Type == routerconfig.EntityListener && fmt.Sprint(e.Attrs["role"]) == routerconfig.RoleNormal {
			e.Attrs = maps.Clone(e.Attrs)
			e.Attrs["host"], e.Attrs["port"] = host, port
		}
		out[i] = e
	}
	return out
}
