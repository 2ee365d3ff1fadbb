package inventory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	dnsMsg := func(what, name string) string {
		return fmt.Sprintf("Invalid format for field '%s': %q must be a DNS label (lower-case letters, digits and '-', at most 63 characters)", what, name)
	}
	for _, tc := range []struct {
		what, name, want string
	}{
		{"name", "plant-a", ""},
		{"name", "a", ""},
		{"name", "0", ""},
		{"name", "a1-b2", ""},
		{"name", strings.Repeat("a", 63), ""},
		{"application", "shop", ""},
		{"name", "", "Required field 'name' is missing"},
		{"application", "", "Required field 'application' is missing"},
		{"name", strings.Repeat("a", 64), dnsMsg("name", strings.Repeat("a", 64))},
		{"name", "Plant", dnsMsg("name", "Plant")},
		{"name", "-a", dnsMsg("name", "-a")},
		{"name", "a-", dnsMsg("name", "a-")},
		{"name", "a_b", dnsMsg("name", "a_b")},
		{"name", "a.b", dnsMsg("name", "a.b")},
		{"name", "a b", dnsMsg("name", "a b")},
		{"name", "é", dnsMsg("name", "é")},
		{"name", "a\n", dnsMsg("name", "a\n")},
	} {
		t.Run(fmt.Sprintf("%s=%q", tc.what, tc.name), func(t *testing.T) {
			err := ValidName(tc.what, tc.name)
			if got := errString(err); got != tc.want {
				t.Fatalf("ValidName(%q, %q) = %q, want %q", tc.what, tc.name, got, tc.want)
			}
		})
	}
}

func TestValidateAgent(t *testing.T) {
	ok := Agent{Name: "plant-a", RouterMode: RouterEdge, Tags: []string{}}
	with := func(f func(*Agent)) Agent {
		a := ok
		f(&a)
		return a
	}
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d", i)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		agent Agent
		want  string
	}{
		{"edge", ok, ""},
		{"interior default router", with(func(a *Agent) { a.RouterMode, a.DefaultRouter = RouterInterior, true }), ""},
		{"none", with(func(a *Agent) { a.RouterMode = RouterNone }), ""},
		{"upstreams on edge", with(func(a *Agent) { a.UpstreamRouters = []string{"hub"} }), ""},
		{"max host", with(func(a *Agent) { a.Host = strings.Repeat("h.", MaxHost/2) + "h" }), ""},
		{"IPv6 host", with(func(a *Agent) { a.Host = "2001:db8::1" }), ""},
		{"CRLF in host", with(func(a *Agent) { a.Host = "evil\r\nX-Injected: 1" }),
			`Invalid format for field 'host': "evil\r\nX-Injected: 1" must be a DNS name or an IP address`},
		{"NUL in host", with(func(a *Agent) { a.Host = "h\x00" }), `Invalid format for field 'host': "h\x00" must be a DNS name or an IP address`},
		{"host with a zone", with(func(a *Agent) { a.Host = "fe80::1%eth0" }), `Invalid format for field 'host': "fe80::1%eth0" must be a DNS name or an IP address`},
		{"host with a port", with(func(a *Agent) { a.Host = "h:80" }), `Invalid format for field 'host': "h:80" must be a DNS name or an IP address`},
		{"tags verbatim", with(func(a *Agent) { a.Tags = []string{"service.iofog.org/tag: x", " odd = tag ", ""} }), ""},
		{"max tags", with(func(a *Agent) { a.Tags = many(MaxTags) }), ""},
		{"max upstreams", with(func(a *Agent) { a.UpstreamRouters = many(MaxUpstreams) }), ""},

		{"no name", with(func(a *Agent) { a.Name = "" }), "Required field 'name' is missing"},
		{"bad name", with(func(a *Agent) { a.Name = "Plant A" }),
			`Invalid format for field 'name': "Plant A" must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`},
		{"empty routerMode", with(func(a *Agent) { a.RouterMode = "" }), "Field routerMode is not one of enum values: edge,interior,none"},
		{"bad routerMode", with(func(a *Agent) { a.RouterMode = "Edge" }), "Field routerMode is not one of enum values: edge,interior,none"},
		{"long host", with(func(a *Agent) { a.Host = strings.Repeat("h", MaxHost+1) }), "Field 'host' is longer than 253 characters"},
		{"edge default router", with(func(a *Agent) { a.DefaultRouter = true }),
			"Agent plant-a cannot be the default router: the default router must have routerMode interior"},
		{"none default router", with(func(a *Agent) { a.RouterMode, a.DefaultRouter = RouterNone, true }),
			"Agent plant-a cannot be the default router: the default router must have routerMode interior"},
		{"none with upstreams", with(func(a *Agent) { a.RouterMode, a.UpstreamRouters = RouterNone, []string{"hub"} }),
			"Agent plant-a has routerMode none and so cannot have upstreamRouters"},
		{"too many upstreams", with(func(a *Agent) { a.UpstreamRouters = many(MaxUpstreams + 1) }),
			"Field 'upstreamRouters' has more than 16 entries"},
		{"too many tags", with(func(a *Agent) { a.Tags = many(MaxTags + 1) }),
			"Field 'tags' has 65 tags, more than the limit of 64"},
		{"long tag", with(func(a *Agent) { a.Tags = []string{"ok", strings.Repeat("t", MaxTagLength+1)} }),
			"Field 'tags[1]' is longer than 1024 characters"},
		{"name looks like a uuid", with(func(a *Agent) { a.Name = "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01" }),
			`Invalid format for field 'name': "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01" looks like a uuid, which would make references to agents ambiguous`},
		{"name is uuid-like but not canonical", with(func(a *Agent) { a.Name = "0b5e0a353b444a4e8d5c6b1a3f2e9c01" }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(ValidateAgent(tc.agent)); got != tc.want {
				t.Fatalf("ValidateAgent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHasRouter(t *testing.T) {
	for mode, want := range map[string]bool{RouterEdge: true, RouterInterior: true, RouterNone: false, "": false} {
		if got := (Agent{RouterMode: mode}).HasRouter(); got != want {
			t.Errorf("HasRouter(%q) = %v, want %v", mode, got, want)
		}
	}
}

func TestModesWithRouter(t *testing.T) {
	got := ModesWithRouter()
	if want := []string{RouterEdge, RouterInterior}; !slices.Equal(got, want) {
		t.Fatalf("ModesWithRouter() = %q, want %q", got, want)
	}
	// The modes agree with HasRouter, the rule they are derived from.
	for _, mode := range []string{RouterEdge, RouterInterior, RouterNone, ""} {
		if slices.Contains(got, mode) != (Agent{RouterMode: mode}).HasRouter() {
			t.Errorf("ModesWithRouter() and HasRouter disagree on %q", mode)
		}
	}
}

func TestValidateMicroservice(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   Microservice
		want string
	}{
		{"uuid", Microservice{UUID: "0b5e0a35-3b44-4a4e-8d5c-6b1a3f2e9c01", Application: "shop", Name: "cart"}, ""},
		{"ioFog-style id", Microservice{UUID: "Ab12-x", Application: "shop", Name: "cart"}, ""},
		{"empty uuid first", Microservice{Name: "Cart"}, "Invalid format for field 'uuid': empty"},
		{"no application", Microservice{UUID: "m", Name: "cart"}, "Required field 'application' is missing"},
		{"bad name", Microservice{UUID: "m", Application: "shop", Name: "Cart"},
			`Invalid format for field 'name': "Cart" must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`},
		{"bad uuid", Microservice{UUID: "a/b", Application: "shop", Name: "cart"},
			"Invalid format for field 'uuid': letters, digits and '-' only, at most 64 characters"},
		{"long uuid", Microservice{UUID: strings.Repeat("a", 65), Application: "shop", Name: "cart"},
			"Invalid format for field 'uuid': letters, digits and '-' only, at most 64 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(ValidateMicroservice(tc.ms)); got != tc.want {
				t.Fatalf("ValidateMicroservice = %q, want %q", got, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
