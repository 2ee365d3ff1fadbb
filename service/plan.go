package service

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"sort"

	"svcbridge/routerconfig"
)

// ListenerWant is a service an agent's router should listen for.
type ListenerWant struct {
	Service    string `db:"name"`
	BridgePort int    `db:"bridge_port"`
	// Hub says the router holds the service's hub listener, whatever its
	// tags select (TagRule.ListenReason says why it listens).
	Hub bool `db:"-"`
}

// ConnectorWant is a service whose connector belongs on an agent's router.
type ConnectorWant struct {
	Service    string
	TargetPort int
	Backend    Backend
}

// RouterPlan is what to store for one router: its base document, when
// objects svcbridge owns must leave it, and the rows of the objects it
// holds there.
type RouterPlan struct {
	// Base is the base document to store when BaseChanged.
	Base        []byte
	BaseChanged bool
	// Write are the objects to store (new, or their JSON differs);
	// Delete the objects to drop (Kind and Service).
	Write  []routerconfig.Held
	Delete []routerconfig.Held
	// Listeners and Connectors are the services the router holds a
	// listener or connector of after the plan (within its scope), sorted.
	Listeners  []string
	Connectors []string
	// Rewritten names the objects whose content the router sees change
	// ("listener/x", "connector/x"), so their written-at time moves.
	Rewritten map[string]bool
	// Removed names the objects the router no longer sees
	// ("listener/x-listener").
	Removed []string
	// Touched are the services whose objects the router sees change
	// (rewritten or removed), sorted; a change of the base alone (a
	// "-listener" others wrote there) touches none.
	Touched []string
}

// Changed reports whether the document the router pulls changes.
func (p RouterPlan) Changed() bool { return len(p.Rewritten) > 0 || len(p.Removed) > 0 }

// PlanRouter decides what svcbridge holds on one router, from the stored
// base document, the objects it holds there (have) and the services the
// router must listen for and connect to. With scope nil, the wants are the
// whole router's: every object not wanted goes, and so does every
// "-listener" others wrote into the base (seed 001). With scope naming
// services, the plan covers their objects alone, and its cost does not
// depend on what else the router holds. Objects svcbridge owns never stay
// in the base: a wanted one moves to its row, an unwanted one goes.
func PlanRouter(base []byte, have []routerconfig.Held, listeners []ListenerWant, connectors []ConnectorWant, scope []string) (RouterPlan, error) {
	doc, err := routerconfig.Parse(base)
	if err != nil {
		return RouterPlan{}, err
	}
	inScope := func(s string) bool { return scope == nil || slices.Contains(scope, s) }
	plan := RouterPlan{Rewritten: map[string]bool{}}
	held := map[heldKey]json.RawMessage{}
	for _, h := range have {
		if inScope(h.Service) {
			held[heldKey{h.Kind, h.Service}] = h.JSON
		}
	}
	// seen is the object the router sees now: its row, else the base's.
	seen := func(k heldKey) (json.RawMessage, bool) {
		if raw := held[k]; raw != nil {
			return raw, true
		}
		return doc.Get(k.Kind, k.held().Name())
	}
	var wants []routerconfig.Held
	for _, l := range listeners {
		wants = append(wants, routerconfig.Held{Kind: routerconfig.KindListener, Service: l.Service, JSON: Listener(l.Service, l.BridgePort).JSON()})
		plan.Listeners = append(plan.Listeners, l.Service)
	}
	for _, c := range connectors {
		wants = append(wants, routerconfig.Held{Kind: routerconfig.KindConnector, Service: c.Service, JSON: Connector(c.Service, c.TargetPort, c.Backend).JSON()})
		plan.Connectors = append(plan.Connectors, c.Service)
	}
	wanted := map[heldKey]bool{}
	for _, w := range wants {
		k := heldKey{w.Kind, w.Service}
		wanted[k] = true
		if old, ok := seen(k); !ok || !routerconfig.SameJSON(old, w.JSON) {
			plan.Rewritten[w.Kind+"/"+w.Service] = true
			plan.Touched = append(plan.Touched, w.Service)
		}
		if raw, ok := held[k]; !ok || !bytes.Equal(raw, w.JSON) {
			plan.Write = append(plan.Write, w)
		}
		plan.BaseChanged = doc.Delete(k.Kind, w.Name()) || plan.BaseChanged
	}
	for _, k := range slices.SortedFunc(maps.Keys(held), compareHeld) {
		if wanted[k] {
			continue
		}
		plan.Delete = append(plan.Delete, k.held())
		if _, ok := seen(k); ok {
			plan.Removed = append(plan.Removed, k.Kind+"/"+k.held().Name())
			plan.Touched = append(plan.Touched, k.Service)
		}
		plan.BaseChanged = doc.Delete(k.Kind, k.held().Name()) || plan.BaseChanged
	}
	if scope == nil {
		for _, name := range doc.Names(routerconfig.KindListener) {
			if routerconfig.Owned(routerconfig.KindListener, name) {
				doc.Delete(routerconfig.KindListener, name)
				plan.Removed = append(plan.Removed, routerconfig.KindListener+"/"+name)
				plan.BaseChanged = true
			}
		}
	}
	if plan.BaseChanged {
		plan.Base = doc.Marshal()
	}
	sort.Strings(plan.Listeners)
	sort.Strings(plan.Connectors)
	slices.Sort(plan.Touched)
	plan.Touched = slices.Compact(plan.Touched)
	return plan, nil
}

// heldKey names an object svcbridge holds on a router.
type heldKey struct{ Kind, Service string }

func (k heldKey) held() routerconfig.Held { return routerconfig.Held{Kind: k.Kind, Service: k.Service} }

func compareHeld(a, b heldKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Service, b.Service))
}
