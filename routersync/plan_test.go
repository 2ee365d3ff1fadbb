package routersync

import (
	"strings"
	"testing"

	"svcbridge/routerconfig"
)

func ent(typ, name string, attrs ...string) routerconfig.Entity {
	e := routerconfig.Entity{Type: typ, Name: name, Attrs: map[string]any{"name": name}}
	for _, kv := range attrs {
		k, v, _ := strings.Cut(kv, "=")
		e.Attrs[k] = v
	}
	return e
}

func keysOf(es []routerconfig.Entity) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key())
	}
	return strings.Join(out, " ")
}

func TestPlanApply(t *testing.T) {
	const (
		tl = routerconfig.EntityTCPListener
		tc = routerconfig.EntityTCPConnector
		co = routerconfig.EntityConnector
	)
	router := ent(routerconfig.EntityRouter, "r1", "id=r1", "mode=edge")
	for _, tc := range []struct {
		name             string
		desired, current []routerconfig.Entity
		types            []string
		previous         []string
		retry            bool
		creates, deletes string
		restart          string // a substring of the restart reasons; "" for none
	}{
		{
			name:    "an empty router gets every bridge and link",
			desired: []routerconfig.Entity{router, ent(tl, "a-listener", "port=10024", "address=a"), ent(tc, "a-connector", "host=h", "port=80", "address=a"), ent(co, "up", "host=hub", "role=edge")},
			current: []routerconfig.Entity{router},
			types:   AgentTypes,
			creates: "connector/up tcpConnector/a-connector tcpListener/a-listener",
		},
		{
			name:    "the same bridges (the router answers more attributes) change nothing",
			desired: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a")},
			current: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a", "host=", "operStatus=down", "connectionMsg=")},
			types:   AgentTypes,
		},
		{
			name:    "a changed port is a delete and a create",
			desired: []routerconfig.Entity{ent(tl, "a-listener", "port=10025", "address=a")},
			current: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a")},
			types:   AgentTypes,
			deletes: "tcpListener/a-listener", creates: "tcpListener/a-listener",
		},
		{
			name:    "a listener whose socket failed is made again on a retry",
			desired: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a")},
			current: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a", "operStatus=down", "connectionMsg=Address already in use")},
			types:   AgentTypes, retry: true,
			deletes: "tcpListener/a-listener", creates: "tcpListener/a-listener",
		},
		{
			name:    "and left alone otherwise",
			desired: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a")},
			current: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a", "operStatus=down", "connectionMsg=Address already in use")},
			types:   AgentTypes,
		},
		{
			name:    "a listener down for want of a connector is left as it is",
			desired: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a")},
			current: []routerconfig.Entity{ent(tl, "a-listener", "port=10024", "address=a", "operStatus=down", "connectionMsg=")},
			types:   AgentTypes,
		},
		{
			name: "svcbridge's bridges no longer in the document go; others' stay",
			current: []routerconfig.Entity{ent(tl, "old-listener"), ent(tc, "old-connector"), ent(tl, "manual"), ent(tc, "manual-conn"),
				ent(co, "hand-made-link")},
			types:   AgentTypes,
			deletes: "tcpConnector/old-connector tcpListener/old-listener",
		},
		{
			name:     "what the sync applied before goes too, whatever its name",
			current:  []routerconfig.Entity{ent(co, "old-upstream"), ent(tl, "renamed")},
			types:    AgentTypes,
			previous: []string{"connector/old-upstream", "tcpListener/renamed"},
			deletes:  "connector/old-upstream tcpListener/renamed",
		},
		{
			name:    "the hub file's links are not applied at run time",
			desired: []routerconfig.Entity{ent(co, "up", "host=hub")},
			types:   HubTypes,
		},
		{
			name:    "another id or mode wants a restart, not a change",
			desired: []routerconfig.Entity{ent(routerconfig.EntityRouter, "r2", "id=r2", "mode=interior")},
			current: []routerconfig.Entity{router},
			types:   AgentTypes,
			restart: "the router's id is r1, the document's r2",
		},
		{
			name:    "a listener of its own the router lacks wants a restart",
			desired: []routerconfig.Entity{ent(routerconfig.EntityListener, "edge", "port=45671", "role=edge")},
			types:   AgentTypes,
			restart: "listener edge differs",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := map[string]bool{}
			for _, k := range tc.previous {
				prev[k] = true
			}
			p := PlanApply(tc.desired, tc.current, tc.types, prev, tc.retry)
			if got := keysOf(p.Creates); got != tc.creates {
				t.Errorf("creates %q, want %q", got, tc.creates)
			}
			if got := keysOf(p.Deletes); got != tc.deletes {
				t.Errorf("deletes %q, want %q", got, tc.deletes)
			}
			restart := strings.Join(p.Restart, "; ")
			if (tc.restart == "") != (restart == "") || !strings.Contains(restart, tc.restart) {
				t.Errorf("restart %q, want %q", restart, tc.restart)
			}
		})
	}
}

func TestLocalize(t *testing.T) {
	es := []routerconfig.Entity{
		ent(routerconfig.EntityListener, "hub-amqp", "host=127.0.0.1", "port=5672", "role=normal"),
		ent(routerconfig.EntityListener, "hub-edge", "host=0.0.0.0", "port=45671", "role=edge"),
		ent(routerconfig.EntityTCPListener, "a-listener", "port=5672"),
	}
	out := Localize(es, "127.0.0.1:15672")
	if out[0].Attrs["port"] != "15672" || out[0].Attrs["host"] != "127.0.0.1" {
		t.Errorf("the management listener: %v", out[0].Attrs)
	}
	if out[1].Attrs["port"] != "45671" || out[2].Attrs["port"] != "5672" {
		t.Errorf("other entities changed: %v %v", out[1].Attrs, out[2].Attrs)
	}
	if es[0].Attrs["port"] != "5672" {
		t.Errorf("the caller's entities changed: %v", es[0].Attrs)
	}
}
