package inventory

import (
	"errors"
	"reflect"
	"testing"

	"svcbridge/document"
)

func ptr[T any](v T) *T { return &v }

// wantDecoded fails unless got and err are want and the *document.Error
// message msg ("" for none).
func wantDecoded[T any](t *testing.T, got T, err error, want T, msg string) {
	t.Helper()
	var invalid *document.Error
	switch {
	case msg == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case msg != "" && (!errors.As(err, &invalid) || invalid.Message != msg):
		t.Fatalf("error = %v (%T), want *document.Error %q", err, err, msg)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("decoded = %+v, want %+v", got, want)
	}
}

func TestDecodeAgentJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       AgentInput
		msg        string
	}{
		{"every field", `{"uuid":"u","name":"a","host":"h","routerMode":"edge","tags":["t"],"upstreamRouters":["hub"],"defaultRouter":false}`,
			AgentInput{UUID: ptr("u"), Name: ptr("a"), Host: ptr("h"), RouterMode: ptr("edge"), Tags: ptr([]string{"t"}),
				UpstreamRouters: ptr([]string{"hub"}), DefaultRouter: ptr(false)}, ""},
		{"absent fields stay nil; answer fields are ignored", `{"name":"a","createdAt":"x","upstreamRouterNames":[],"links":["h"],"router":{"lagging":true}}`,
			AgentInput{Name: ptr("a")}, ""},
		{"unknown key", `{"name":"a","color":"red"}`, AgentInput{}, "Unknown field 'color'"},
		{"wrong type", `{"name":"a","defaultRouter":"yes"}`, AgentInput{}, "Field 'defaultRouter' is not of a type(s) boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeAgentJSON([]byte(tc.body))
			wantDecoded(t, got, err, tc.want, tc.msg)
		})
	}
}

func TestDecodeAgentYAML(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      AgentInput
		msg       string
	}{
		{"whole agent", "kind: AgentConfig\nmetadata:\n  name: a\n  tags: [t]\nspec:\n  host: h\n  routerMode: interior\n  upstreamRouters: [hub]\n  defaultRouter: true\n",
			AgentInput{Name: ptr("a"), Tags: ptr([]string{"t"}), Host: ptr("h"), RouterMode: ptr("interior"),
				UpstreamRouters: ptr([]string{"hub"}), DefaultRouter: ptr(true)}, ""},
		{"no spec: absent lists are empty", "kind: Agent\nmetadata:\n  name: a\n",
			AgentInput{Name: ptr("a"), Tags: ptr([]string{}), UpstreamRouters: ptr([]string{})}, ""},
		{"no metadata", "kind: Agent\nspec: {}\n", AgentInput{}, "Invalid YAML format: missing metadata"},
		{"metadata not a mapping", "kind: Agent\nmetadata: [a]\n", AgentInput{}, "Invalid YAML format: metadata must be a mapping"},
		{"spec not a mapping", "kind: Agent\nmetadata:\n  name: a\nspec: 3\n", AgentInput{}, "Invalid YAML format: spec must be a mapping"},
		{"no name", "kind: Agent\nmetadata:\n  tags: []\n", AgentInput{}, "Required field 'name' is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeAgentYAML([]byte(tc.doc))
			wantDecoded(t, got, err, tc.want, tc.msg)
		})
	}
}

func TestAgentInputApply(t *testing.T) {
	base := Agent{UUID: "u", Name: "a", Host: "h", RouterMode: RouterEdge, Tags: []string{"t"}, UpstreamRouters: []string{"hub"}}
	got := AgentInput{Name: ptr("b"), Tags: ptr([]string{"x"})}.Apply(base)
	want := Agent{UUID: "u", Name: "b", Host: "h", RouterMode: RouterEdge, Tags: []string{"x"}, UpstreamRouters: []string{"hub"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Apply = %+v, want %+v", got, want)
	}
	got.UpstreamRouters[0] = "changed"
	if base.UpstreamRouters[0] != "hub" {
		t.Fatal("Apply's result shares base's slices")
	}
}

func TestDecodeMicroserviceJSON(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       MicroserviceInput
		msg        string
	}{
		{"every field", `{"uuid":"u","application":"shop","name":"cart","agent":"plant-a","hostNetworkMode":true}`,
			MicroserviceInput{UUID: ptr("u"), Application: ptr("shop"), Name: ptr("cart"), Agent: ptr("plant-a"), HostNetworkMode: ptr(true)}, ""},
		{"answer fields are ignored", `{"name":"cart","createdAt":"x"}`, MicroserviceInput{Name: ptr("cart")}, ""},
		{"unknown key", `{"name":"cart","color":"red"}`, MicroserviceInput{}, "Unknown field 'color'"},
		{"iofogUuid, the reference's agent", `{"iofogUuid":"a-uuid"}`, MicroserviceInput{Agent: ptr("a-uuid")}, ""},
		{"agent wins over iofogUuid", `{"agent":"plant-a","iofogUuid":"a-uuid"}`, MicroserviceInput{Agent: ptr("plant-a")}, ""},
		{"iofogUuid of the wrong type", `{"iofogUuid":null}`, MicroserviceInput{}, "Field 'iofogUuid' is not of a type(s) string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeMicroserviceJSON([]byte(tc.body))
			wantDecoded(t, got, err, tc.want, tc.msg)
		})
	}
	m := MicroserviceInput{Name: ptr("till"), Agent: ptr("other")}.Apply(Microservice{UUID: "u", Application: "shop", Name: "cart", AgentUUID: "a"})
	if want := (Microservice{UUID: "u", Application: "shop", Name: "till", AgentUUID: "a"}); m != want {
		t.Fatalf("Apply = %+v, want %+v", m, want)
	}
}
