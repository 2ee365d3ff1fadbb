package service

import (
	"bytes"
	"encoding/json"
	"sort"

	"svcbridge/routerconfig"
)

// ListenerWant is a service an agent's router should listen for, and why.
type ListenerWant struct {
	Service    string `db:"name"`
	BridgePort int    `db:"bridge_port"`
	Reason     string `db:"reason"`
}

// ConnectorWant is a service whose connector belongs on an agent's router.
type ConnectorWant struct {
	Service    string
	TargetPort int
	Backend    Backend
}

// RouterPlan is the router config an agent should have.
type RouterPlan struct {
	Config     []byte
	Changed    bool     // Config differs from the current document
	Listeners  []string // services listened for, sorted
	Connectors []string // services connected to, sorted
	// Rewritten names the objects whose content changed ("listener/x",
	// "connector/x"), so their written-at time moves.
	Rewritten map[string]bool
	// Removed names the objects the plan takes out ("listener/x-listener").
	Removed []string
}

// PlanRouter computes an agent's router config from its current document:
// every "-listener" entry is rebuilt from listeners, connectors svcbridge
// wrote earlier (ownedConnectors, service names) that are no longer wanted
// go, wanted connectors are written; everything else stays as it is.
func PlanRouter(current []byte, listeners []ListenerWant, connectors []ConnectorWant, ownedConnectors []string) (RouterPlan, error) {
	doc, err := routerconfig.Parse(current)
	if err != nil {
		return RouterPlan{}, err
	}
	before, _ := routerconfig.Parse(current)
	plan := RouterPlan{Rewritten: map[string]bool{}}

	ls := make([]routerconfig.Listener, 0, len(listeners))
	for _, l := range listeners {
		ls = append(ls, Listener(l.Service, l.BridgePort))
		plan.Listeners = append(plan.Listeners, l.Service)
	}
	doc.SetListeners(ls)

	cs := make([]routerconfig.Connector, 0, len(connectors))
	for _, c := range connectors {
		cs = append(cs, Connector(c.Service, c.TargetPort, c.Backend))
		plan.Connectors = append(plan.Connectors, c.Service)
	}
	owned := make([]string, len(ownedConnectors))
	for i, s := range ownedConnectors {
		owned[i] = routerconfig.ConnectorName(s)
	}
	doc.SetConnectors(cs, owned)

	for _, l := range ls {
		if old, ok := before.Listener(l.Name); !ok || !sameJSON(old, doc, l.Name, true) {
			plan.Rewritten["listener/"+l.Address] = true
		}
	}
	for _, c := range cs {
		if old, ok := before.Connector(c.Name); !ok || !sameJSON(old, doc, c.Name, false) {
			plan.Rewritten["connector/"+c.Address] = true
		}
	}
	for _, name := range before.ListenerNames() {
		if _, ok := doc.Listener(name); !ok {
			plan.Removed = append(plan.Removed, "listener/"+name)
		}
	}
	for _, name := range before.ConnectorNames() {
		if _, ok := doc.Connector(name); !ok {
			plan.Removed = append(plan.Removed, "connector/"+name)
		}
	}
	sort.Strings(plan.Listeners)
	sort.Strings(plan.Connectors)
	plan.Config = doc.Marshal()
	plan.Changed = !bytes.Equal(plan.Config, current)
	return plan, nil
}

// sameJSON compares the old raw entry with the one now in doc, ignoring
// formatting.
func sameJSON(old []byte, doc *routerconfig.Doc, name string, listener bool) bool {
	now, _ := doc.Connector(name)
	if listener {
		now, _ = doc.Listener(name)
	}
	var a, b bytes.Buffer
	return json.Compact(&a, old) == nil && json.Compact(&b, now) == nil && bytes.Equal(a.Bytes(), b.Bytes())
}

// ReasonHub is why the hub router listens for a service: it holds the
// service's hub listener (default router or defaultBridge).
const ReasonHub = "hub"
