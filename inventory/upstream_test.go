package inventory

import (
	"reflect"
	"testing"
)

func TestParseAgentUUID(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"0B5E0A35-3B44-4A4E-8D5C-6B1A3F2E9C01", "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01", ""},
		{"0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01", "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01", ""},
		// uuid.Parse accepts these forms; a stored uuid is only the canonical one.
		{"0b5e0a353b444a4e8d5c6b1a3f2e9c01", "", `Invalid format for field 'uuid': "0b5e0a353b444a4e8d5c6b1a3f2e9c01" is not a uuid`},
		{"urn:uuid:0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01", "", `Invalid format for field 'uuid': "urn:uuid:0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01" is not a uuid`},
		{"", "", `Invalid format for field 'uuid': "" is not a uuid`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAgentUUID(tc.in)
			if got != tc.want || errString(err) != tc.err {
				t.Fatalf("ParseAgentUUID = %q, %q; want %q, %q", got, errString(err), tc.want, tc.err)
			}
			if tc.err == "" && !IsUUID(tc.in) {
				t.Fatalf("IsUUID(%q) = false for an accepted uuid", tc.in)
			}
		})
	}
}

func TestResolveUpstreams(t *testing.T) {
	hub := Agent{UUID: "u-hub", Name: "hub", RouterMode: RouterInterior}
	dc := Agent{UUID: "u-dc", Name: "dc", RouterMode: RouterInterior}
	edge := Agent{UUID: "u-edge", Name: "edge", RouterMode: RouterEdge}
	none := Agent{UUID: "u-none", Name: "none", RouterMode: RouterNone}
	self := Agent{UUID: "u-self", Name: "plant", RouterMode: RouterInterior}
	found := func(ref string, a Agent) Upstream { return Upstream{Ref: ref, Agent: &a} }
	for _, tc := range []struct {
		name string
		ups  []Upstream
		want []string
		err  string
	}{
		{"none", nil, []string{}, ""},
		{"by name and uuid, in order", []Upstream{found("dc", dc), found("u-hub", hub)}, []string{"u-dc", "u-hub"}, ""},
		{"self by name, though it does not exist yet", []Upstream{{Ref: "plant"}}, nil, "Agent plant cannot be its own upstream router"},
		{"self by uuid", []Upstream{{Ref: "u-self"}}, nil, "Agent plant cannot be its own upstream router"},
		{"self under another name", []Upstream{found("U-SELF", self)}, nil, "Agent plant cannot be its own upstream router"},
		{"no such agent", []Upstream{found("hub", hub), {Ref: "ghost"}}, nil, "Invalid upstream router 'ghost': no such agent"},
		{"edge router", []Upstream{found("edge", edge)}, nil,
			"Invalid upstream router 'edge': agent edge has routerMode edge, and only interior routers accept connections"},
		{"no router", []Upstream{found("u-none", none)}, nil,
			"Invalid upstream router 'u-none': agent none has routerMode none, and only interior routers accept connections"},
		{"twice under two names", []Upstream{found("hub", hub), found("u-hub", hub)}, nil, "Upstream router 'u-hub' is listed twice"},
		{"first broken rule wins", []Upstream{{Ref: "ghost"}, found("edge", edge)}, nil, "Invalid upstream router 'ghost': no such agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveUpstreams(self, tc.ups)
			if errString(err) != tc.err || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ResolveUpstreams = %v, %q; want %v, %q", got, errString(err), tc.want, tc.err)
			}
		})
	}
}

func TestUpstreamUsers(t *testing.T) {
	hub := Agent{UUID: "u-hub", Name: "hub", RouterMode: RouterInterior}
	all := []Agent{
		hub,
		{UUID: "u-a", Name: "a", UpstreamRouters: []string{"u-dc", "u-hub"}},
		{UUID: "u-b", Name: "b", UpstreamRouters: []string{"u-dc"}},
		{UUID: "u-c", Name: "c", UpstreamRouters: []string{"u-hub"}},
	}
	if got, want := UpstreamUsers(hub, all), []string{"a", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UpstreamUsers = %v, want %v", got, want)
	}
	if got := UpstreamUsers(Agent{UUID: "u-b"}, all); got != nil {
		t.Fatalf("UpstreamUsers of an unused agent = %v, want none", got)
	}
}

func TestRoutingChanged(t *testing.T) {
	old := Agent{UUID: "u", Name: "plant", Host: "h", RouterMode: RouterInterior, UpstreamRouters: []string{"u-hub", "u-dc"}, Tags: []string{"a"}}
	for _, tc := range []struct {
		name   string
		change func(*Agent)
		want   bool
	}{
		{"nothing", func(*Agent) {}, false},
		{"name", func(a *Agent) { a.Name = "other" }, false},
		{"tags", func(a *Agent) { a.Tags = []string{"b"} }, false},
		{"host", func(a *Agent) { a.Host = "h2" }, true},
		{"router mode", func(a *Agent) { a.RouterMode = RouterEdge }, true},
		{"hub role", func(a *Agent) { a.DefaultRouter = true }, true},
		{"upstream added", func(a *Agent) { a.UpstreamRouters = append(a.UpstreamRouters, "u-x") }, true},
		{"upstreams removed", func(a *Agent) { a.UpstreamRouters = nil }, true},
		{"upstream order", func(a *Agent) { a.UpstreamRouters = []string{"u-dc", "u-hub"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := old
			a.UpstreamRouters = append([]string(nil), old.UpstreamRouters...)
			tc.change(&a)
			if got := RoutingChanged(old, a); got != tc.want {
				t.Fatalf("RoutingChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMicroserviceRoutingChanged(t *testing.T) {
	old := Microservice{UUID: "m", Application: "shop", Name: "cart", AgentUUID: "u-a"}
	for _, tc := range []struct {
		change func(*Microservice)
		want   bool
	}{
		{func(*Microservice) {}, false},
		{func(m *Microservice) { m.AgentUUID = "u-b" }, true},
		{func(m *Microservice) { m.HostNetworkMode = true }, true},
		{func(m *Microservice) { m.Application = "store" }, true},
		{func(m *Microservice) { m.Name = "basket" }, true},
	} {
		m := old
		tc.change(&m)
		if got := MicroserviceRoutingChanged(old, m); got != tc.want {
			t.Errorf("MicroserviceRoutingChanged(%+v) = %v, want %v", m, got, tc.want)
		}
	}
}

// A new agent's lists are empty, never nil: the API answers [] for them,
// not null.
func TestNewAgentHasEmptyLists(t *testing.T) {
	a := NewAgent("u")
	if a.UUID != "u" || a.RouterMode != RouterEdge || a.Tags == nil || len(a.Tags) != 0 ||
		a.UpstreamRouters == nil || len(a.UpstreamRouters) != 0 {
		t.Fatalf("NewAgent = %#v", a)
	}
}
