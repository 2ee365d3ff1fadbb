package service

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// wantMessage fails unless err is a *ValidationError with exactly want
// (want == "" means no error).
func wantMessage(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want *ValidationError %q", err, err, want)
	}
	if ve.Message != want {
		t.Fatalf("message = %q\nwant      %q", ve.Message, want)
	}
}

func TestDecodeJSONReadsEveryFieldAndIgnoresAssignedOnes(t *testing.T) {
	p, err := DecodeJSON([]byte(`{
		"name": "checkout", "type": "microservice", "resource": "orders/checkout",
		"targetPort": 8080, "defaultBridge": "default-router", "servicePort": 80,
		"k8sType": "LoadBalancer", "tags": ["checkout", "a: b"],
		"bridgePort": 1, "serviceEndpoint": "x", "provisioningStatus": "ready", "workflowId": "w",
		"distribution": [{"agent": "a"}], "generation": 2, "createdAt": "2026-01-01T00:00:00Z"
	}`))
	wantMessage(t, err, "")
	want := Patch{
		Name: ptr("checkout"), Type: ptr("microservice"), Resource: ptr("orders/checkout"),
		TargetPort: ptr(8080), DefaultBridge: ptr("default-router"), ServicePort: ptr(80),
		K8sType: ptr("LoadBalancer"), Tags: &[]string{"checkout", "a: b"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
}

func TestDecodeJSONAbsentFieldsAreNil(t *testing.T) {
	p, err := DecodeJSON([]byte(`{"name":"x"}`))
	wantMessage(t, err, "")
	if p.Tags != nil || p.Type != nil || p.TargetPort != nil || p.ServicePort != nil || p.K8sType != nil {
		t.Fatalf("absent fields must be nil: %+v", p)
	}
	p, err = DecodeJSON([]byte(`{"tags":[]}`))
	wantMessage(t, err, "")
	if p.Tags == nil || len(*p.Tags) != 0 {
		t.Fatalf("tags [] must be a present empty list: %+v", p.Tags)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"body is an array", `[]`, "Field 'instance' is not of a type(s) object"},
		{"body is null", `null`, "Field 'instance' is not of a type(s) object"},
		{"body is a string", `"x"`, "Field 'instance' is not of a type(s) object"},
		{"body is a number", `12`, "Field 'instance' is not of a type(s) object"},
		{"empty body", ``, "Invalid JSON: empty body"},
		{"whitespace body", " \n ", "Invalid JSON: empty body"},
		{"broken JSON", `{"name":`, "Invalid JSON: unexpected EOF"},
		{"bad character", `{"name" "x"}`, "Invalid JSON: invalid character '\"' after object key"},
		{"trailing object", `{} {}`, "Invalid JSON: unexpected data after the top-level value"},
		{"trailing garbage", `{}x`, "Invalid JSON: unexpected data after the top-level value"},
		{"trailing brace", `{}}`, "Invalid JSON: unexpected data after the top-level value"},
		{"name not string", `{"name":1}`, "Field 'name' is not of a type(s) string"},
		{"name null", `{"name":null}`, "Field 'name' is not of a type(s) string"},
		{"type not string", `{"type":true}`, "Field 'type' is not of a type(s) string"},
		{"resource not string", `{"resource":{}}`, "Field 'resource' is not of a type(s) string"},
		{"resource null", `{"resource":null}`, "Field 'resource' is not of a type(s) string"},
		{"targetPort string", `{"targetPort":"8080"}`, "Field 'targetPort' is not of a type(s) integer"},
		{"targetPort fraction", `{"targetPort":80.5}`, "Field 'targetPort' is not of a type(s) integer"},
		{"targetPort null", `{"targetPort":null}`, "Field 'targetPort' is not of a type(s) integer"},
		{"targetPort overflowing float", `{"targetPort":1e400}`, "Field 'targetPort' is not of a type(s) integer"},
		{"defaultBridge not string", `{"defaultBridge":[]}`, "Field 'defaultBridge' is not of a type(s) string"},
		{"servicePort not integer", `{"servicePort":"80"}`, "Field 'servicePort' is not of a type(s) integer"},
		{"k8sType null", `{"k8sType":null}`, "Field 'k8sType' is not of a type(s) string"},
		{"tags not array", `{"tags":"checkout"}`, "Field 'tags' is not of a type(s) array"},
		{"tags null", `{"tags":null}`, "Field 'tags' is not of a type(s) array"},
		{"tag not string", `{"tags":["a",1]}`, "Field 'tags[1]' is not of a type(s) string"},
		{"tag null", `{"tags":[null]}`, "Field 'tags[0]' is not of a type(s) string"},
		// Field order: name, type, resource, targetPort, defaultBridge, servicePort, k8sType, tags.
		{"order name before tags", `{"tags":1,"name":1}`, "Field 'name' is not of a type(s) string"},
		{"order resource before targetPort", `{"targetPort":"x","resource":1}`, "Field 'resource' is not of a type(s) string"},
		{"order servicePort before k8sType", `{"k8sType":1,"servicePort":"x"}`, "Field 'servicePort' is not of a type(s) integer"},
		{"order k8sType before tags", `{"tags":1,"k8sType":1}`, "Field 'k8sType' is not of a type(s) string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeJSON([]byte(tt.body))
			wantMessage(t, err, tt.want)
		})
	}
}

func TestDecodeJSONIntegerValuedNumbersAreIntegers(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{`{"targetPort":8080}`, 8080},
		{`{"targetPort":8080.0}`, 8080},
		{`{"targetPort":8.08e3}`, 8080},
		{`{"targetPort":-0}`, 0},
		{`{"targetPort":-1}`, -1},
		// Huge integers do not panic or wrap: they clamp, and the range
		// check rejects them.
		{`{"targetPort":99999999999999999999999999}`, math.MaxInt},
		{`{"targetPort":-99999999999999999999999999}`, math.MinInt},
		{`{"targetPort":1e300}`, math.MaxInt},
		// Underflows to 0, as JavaScript reads it; the range check rejects it.
		{`{"targetPort":1e-400}`, 0},
	}
	for _, tt := range tests {
		p, err := DecodeJSON([]byte(tt.body))
		wantMessage(t, err, "")
		if p.TargetPort == nil || *p.TargetPort != tt.want {
			t.Errorf("%s: targetPort = %v, want %d", tt.body, p.TargetPort, tt.want)
		}
	}
}

// TestDecodeJSONRefusesWhatNoFieldHolds: unknown and duplicated keys,
// invalid UTF-8, control characters and repeated tags are refused with the
// field named, before any field is used.
func TestDecodeJSONRefusesWhatNoFieldHolds(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"misspelt field", `{"name":"a","targetport":1}`, "Unknown field 'targetport'"},
		{"several unknown, sorted", `{"zz":1,"Name":"a","name":"a"}`, "Unknown fields 'Name', 'zz'"},
		{"duplicated key", `{"name":"a","name":"b"}`, "Invalid JSON: duplicated key 'name'"},
		{"duplicated nested key", `{"distribution":[{"agent":"a","agent":"b"}]}`, "Invalid JSON: duplicated key 'distribution[0].agent'"},
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", "Field 'name' is not valid UTF-8"},
		{"invalid UTF-8 in an ignored field", "{\"provisioningError\":\"\xff\"}", "Field 'provisioningError' is not valid UTF-8"},
		{"invalid UTF-8 in a key", "{\"\xff\":1}", "Field '\uFFFD' is not valid UTF-8"},
		{"NUL in name", `{"name":"a\u0000"}`, "Field 'name' contains a control character (U+0000)"},
		{"NUL in resource", `{"resource":"\u0000"}`, "Field 'resource' contains a control character (U+0000)"},
		{"CR in defaultBridge", `{"defaultBridge":"a\r"}`, "Field 'defaultBridge' contains a control character (U+000D)"},
		{"NUL in a tag", `{"tags":["ok","\u0000"]}`, "Field 'tags[1]' contains a control character (U+0000)"},
		{"C1 control in a tag", `{"tags":["\u0085"]}`, "Field 'tags[0]' contains a control character (U+0085)"},
		{"repeated tag", `{"tags":["a","b","a"]}`, `Field 'tags[2]' repeats tags[0] ("a"): each entry may be given once`},
		// encoding/json would store these as U+FFFD.
		{"lone surrogate in a tag", `{"tags":["a","\ud800"]}`, `Field 'tags[1]' contains an unpaired UTF-16 surrogate (\uD800)`},
		{"lone surrogate in an annotation", `{"kubernetes":{"annotations":{"a":"\udc00"}}}`, `Field 'kubernetes.annotations.a' contains an unpaired UTF-16 surrogate (\uDC00)`},
		{"zero-width space in a tag", `{"tags":["a\u200bb"]}`, "Field 'tags[0]' contains an invisible format character (U+200B)"},
		{"bidi override in name", `{"name":"\u202eab"}`, "Field 'name' contains an invisible format character (U+202E)"},
		{"NUL in an annotation", `{"kubernetes":{"annotations":{"a":"\u0000"}}}`, "Field 'kubernetes.annotations.a' contains a control character (U+0000)"},
		{"nested too deep", `{"kubernetes":` + strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat("}", MaxDepth) + `}`, "Invalid JSON: nesting deeper than 32 levels"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeJSON([]byte(tt.body))
			wantMessage(t, err, tt.want)
			if !reflect.DeepEqual(p, Patch{}) {
				t.Fatalf("error came with a patch %+v", p)
			}
		})
	}
	// Text that merely looks odd is fine: non-ASCII letters, a surrogate
	// pair, U+FFFD as written, a space.
	if _, err := DecodeJSON([]byte(`{"tags":["café","\ud83d\ude00","\ufffd","a b"]}`)); err != nil {
		t.Fatal(err)
	}
}

func TestPatchApplyKeepsAbsentFields(t *testing.T) {
	old := Spec{
		Name: "checkout", Tags: []string{"a"}, Type: TypeMicroservice, Resource: "orders/checkout",
		TargetPort: 8080, DefaultBridge: DefaultBridge, ServicePort: ptr(80), K8sType: ptr("ClusterIP"),
	}
	got := Patch{TargetPort: ptr(9090)}.Apply(old)
	want := old
	want.TargetPort = 9090
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// The result must not alias the input.
	got.Tags[0] = "changed"
	*got.ServicePort = 1
	*got.K8sType = "x"
	if old.Tags[0] != "a" || *old.ServicePort != 80 || *old.K8sType != "ClusterIP" {
		t.Fatalf("Apply aliased the old spec: %+v", old)
	}
}

func TestPatchApplyReplacesPresentFields(t *testing.T) {
	old := Spec{Name: "a", Tags: []string{"x"}, Type: TypeAgent, Resource: "r", TargetPort: 1, DefaultBridge: "b"}
	p := Patch{
		Name: ptr("n"), Tags: &[]string{}, Type: ptr(TypeExternal), Resource: ptr("h"), TargetPort: ptr(2),
		DefaultBridge: ptr(""), ServicePort: ptr(3), K8sType: ptr("NodePort"),
	}
	got := p.Apply(old)
	want := Spec{Name: "n", Tags: []string{}, Type: TypeExternal, Resource: "h", TargetPort: 2,
		DefaultBridge: "", ServicePort: ptr(3), K8sType: ptr("NodePort")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	(*p.Tags) = append(*p.Tags, "late")
	*p.ServicePort = 99
	if len(got.Tags) != 0 || *got.ServicePort != 3 {
		t.Fatalf("Apply aliased the patch: %+v", got)
	}
}

func TestRequireCreateNamesFirstMissingField(t *testing.T) {
	full := Patch{Name: ptr("n"), Type: ptr("t"), Resource: ptr("r"), TargetPort: ptr(1)}
	tests := []struct {
		name string
		p    Patch
		want string
	}{
		{"complete", full, ""},
		{"empty", Patch{}, "Required field 'name' is missing"},
		{"no type", Patch{Name: ptr("n")}, "Required field 'type' is missing"},
		{"no resource", Patch{Name: ptr("n"), Type: ptr("t"), TargetPort: ptr(1)}, "Required field 'resource' is missing"},
		{"no targetPort", Patch{Name: ptr("n"), Type: ptr("t"), Resource: ptr("r")}, "Required field 'targetPort' is missing"},
		{"empty strings are present", Patch{Name: ptr(""), Type: ptr(""), Resource: ptr(""), TargetPort: ptr(0)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantMessage(t, tt.p.RequireCreate(), tt.want) })
	}
}

const checkoutYAML = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  defaultBridge: default-router
`

func TestDecodeYAMLReadsMetadataAndSpec(t *testing.T) {
	p, err := DecodeYAML([]byte(`kind: Service
metadata:
  name: checkout
  tags: [checkout, "a: b"]
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  defaultBridge: default-router
  servicePort: 80
  k8sType: LoadBalancer
  bridgePort: 1
  provisioningStatus: ready
`))
	wantMessage(t, err, "")
	want := Patch{
		Name: ptr("checkout"), Type: ptr("microservice"), Resource: ptr("orders/checkout"),
		TargetPort: ptr(8080), DefaultBridge: ptr("default-router"), ServicePort: ptr(80),
		K8sType: ptr("LoadBalancer"), Tags: &[]string{"checkout", "a: b"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
}

func TestDecodeYAMLAbsentTagsMeansNoTags(t *testing.T) {
	p, err := DecodeYAML([]byte("kind: Service\nmetadata: {name: a}\nspec: {type: agent}\n"))
	wantMessage(t, err, "")
	if p.Tags == nil || len(*p.Tags) != 0 {
		t.Fatalf("tags = %v, want present and empty", p.Tags)
	}
	if p.Resource != nil || p.TargetPort != nil || p.DefaultBridge != nil {
		t.Fatalf("absent spec fields must be nil: %+v", p)
	}
	// Applied as an update it clears the stored tags.
	got := p.Apply(Spec{Tags: []string{"old"}})
	if len(got.Tags) != 0 {
		t.Fatalf("YAML without tags must clear tags, got %v", got.Tags)
	}
}

func TestDecodeYAMLApiVersionIsNotChecked(t *testing.T) {
	for _, doc := range []string{
		strings.Replace(checkoutYAML, "iofog.org/v3", "something/else", 1),
		strings.Replace(checkoutYAML, "apiVersion: iofog.org/v3\n", "", 1),
	} {
		_, err := DecodeYAML([]byte(doc))
		wantMessage(t, err, "")
	}
}

func TestDecodeYAMLErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty stream", ``, "Invalid YAML format: missing kind field"},
		{"comment only", "# nothing\n", "Invalid YAML format: missing kind field"},
		{"document is a scalar", "hello\n", "Invalid YAML format: missing kind field"},
		{"document is a list", "- kind: Service\n", "Invalid YAML format: missing kind field"},
		{"no kind", "metadata: {}\nspec: {}\n", "Invalid YAML format: missing kind field"},
		{"null kind", "kind:\nmetadata: {}\nspec: {}\n", "Invalid YAML format: missing kind field"},
		{"empty kind", "kind: ''\n", "Invalid YAML format: missing kind field"},
		{"kind false", "kind: false\n", "Invalid YAML format: missing kind field"},
		{"kind zero", "kind: 0\n", "Invalid YAML format: missing kind field"},
		{"other kind", "kind: Agent\nmetadata: {}\nspec: {}\n", "Invalid kind Agent"},
		{"kind is case-sensitive", "kind: service\n", "Invalid kind service"},
		{"kind is a number", "kind: 5\n", "Invalid kind 5"},
		{"kind is a mapping", "kind: {a: b}\n", "Invalid kind (a mapping)"},
		{"no metadata", "kind: Service\nspec: {}\n", "Invalid YAML format: missing metadata or spec"},
		{"no spec", "kind: Service\nmetadata: {}\n", "Invalid YAML format: missing metadata or spec"},
		{"null spec", "kind: Service\nmetadata: {}\nspec:\n", "Invalid YAML format: missing metadata or spec"},
		{"scalar spec", "kind: Service\nmetadata: {}\nspec: x\n", "Invalid YAML format: metadata and spec must be mappings"},
		{"list metadata", "kind: Service\nmetadata: []\nspec: {}\n", "Invalid YAML format: metadata and spec must be mappings"},
		{"two documents", checkoutYAML + "---\n" + checkoutYAML,
			"Error parsing YAML: expected a single document in the stream, but found more"},
		{"two empty documents", "---\n---\n", "Error parsing YAML: expected a single document in the stream, but found more"},
		{"syntax error", "kind: Service\n  bad: [\n", "Error parsing YAML: line 2: mapping values are not allowed in this context"},
		{"tab indentation", "kind: Service\nspec:\n\ttype: k8s\n", "Error parsing YAML: line 3: found character that cannot start any token"},
		{"duplicated key", "kind: Service\nkind: Service\n", "Error parsing YAML: line 2: duplicated mapping key 'kind'"},
		{"duplicated nested key", "kind: Service\nmetadata: {}\nspec: {type: k8s, type: agent}\n",
			"Error parsing YAML: line 3: duplicated mapping key 'type'"},
		{"merge key in spec", "kind: Service\nmetadata: &b {}\nspec: {<<: *b}\n",
			"Error parsing YAML: line 3: merge keys ('<<') are not supported"},
		{"tags null", "kind: Service\nmetadata:\n  tags:\nspec: {}\n", "Field 'tags' is not of a type(s) array"},
		{"tags scalar", "kind: Service\nmetadata: {tags: checkout}\nspec: {}\n", "Field 'tags' is not of a type(s) array"},
		{"tag is a number", "kind: Service\nmetadata: {tags: [a, 12]}\nspec: {}\n", "Field 'tags[1]' is not of a type(s) string"},
		{"unquoted annotation tag is a mapping", "kind: Service\nmetadata:\n  tags:\n    - a: b\nspec: {}\n",
			"Field 'tags[0]' is not of a type(s) string"},
		{"quoted port", "kind: Service\nmetadata: {}\nspec: {targetPort: \"8080\"}\n", "Field 'targetPort' is not of a type(s) integer"},
		{"fractional port", "kind: Service\nmetadata: {}\nspec: {targetPort: 80.5}\n", "Field 'targetPort' is not of a type(s) integer"},
		{"infinite port", "kind: Service\nmetadata: {}\nspec: {targetPort: .inf}\n", "Field 'targetPort' is not of a type(s) integer"},
		{"null port", "kind: Service\nmetadata: {}\nspec: {targetPort: null}\n", "Field 'targetPort' is not of a type(s) integer"},
		{"quoted servicePort", "kind: Service\nmetadata: {}\nspec: {servicePort: '80'}\n", "Field 'servicePort' is not of a type(s) integer"},
		{"name is a number", "kind: Service\nmetadata: {name: 12}\nspec: {}\n", "Field 'name' is not of a type(s) string"},
		{"name is null", "kind: Service\nmetadata: {name: ~}\nspec: {}\n", "Field 'name' is not of a type(s) string"},
		{"resource is a bool", "kind: Service\nmetadata: {}\nspec: {resource: true}\n", "Field 'resource' is not of a type(s) string"},
		{"resource is a date", "kind: Service\nmetadata: {}\nspec: {resource: 2001-12-14}\n", "Field 'resource' is not of a type(s) string"},
		{"type is a list", "kind: Service\nmetadata: {}\nspec: {type: [k8s]}\n", "Field 'type' is not of a type(s) string"},
		{"k8sType is a number", "kind: Service\nmetadata: {}\nspec: {k8sType: 1}\n", "Field 'k8sType' is not of a type(s) string"},
		{"order name before tags", "kind: Service\nmetadata: {name: 1, tags: ~}\nspec: {}\n", "Field 'name' is not of a type(s) string"},
		{"misspelt spec field", "kind: Service\nmetadata: {name: a}\nspec:\n  type: k8s\n  targetport: 80\n",
			"Unknown field 'spec.targetport' (line 5)"},
		{"unknown metadata fields", "kind: Service\nmetadata: {name: a, labels: {}, namespace: x}\nspec: {}\n",
			"Unknown fields 'metadata.labels', 'metadata.namespace' (line 2)"},
		{"tags under spec", "kind: Service\nmetadata: {}\nspec: {tags: [a]}\n", "Unknown field 'spec.tags' (line 3)"},
		{"key that is a list", "kind: Service\nmetadata: {}\nspec: {[a]: 1}\n", "Error parsing YAML: line 3: a key that is not a scalar"},
		{"unknown top-level field", "kind: Service\nstatus: {}\nmetadata: {}\nspec: {}\n", "Unknown field 'status' (line 2)"},
		{"NUL in a tag", "kind: Service\nmetadata: {tags: [\"a\\0\"]}\nspec: {}\n", "Field 'tags[0]' contains a control character (U+0000)"},
		{"LF in resource", "kind: Service\nmetadata: {}\nspec: {resource: \"a\\nb\"}\n", "Field 'resource' contains a control character (U+000A)"},
		{"isolate in a tag", "kind: Service\nmetadata: {tags: [\"a\u2066\"]}\nspec: {}\n", "Field 'tags[0]' contains an invisible format character (U+2066)"},
		{"tag character in an annotation", "kind: Service\nmetadata: {}\nspec: {kubernetes: {annotations: {a: \"b\U000E0041\"}}}\n", "Field 'kubernetes.annotations.a' contains an invisible format character (U+E0041)"},
		{"NUL in an annotation", "kind: Service\nmetadata: {}\nspec: {kubernetes: {annotations: {a: \"\\0\"}}}\n", "Field 'kubernetes.annotations.a' contains a control character (U+0000)"},
		{"repeated tag", "kind: Service\nmetadata: {tags: [a, a]}\nspec: {}\n", `Field 'tags[1]' repeats tags[0] ("a"): each entry may be given once`},
		{"invalid UTF-8", "kind: Service\nmetadata: {name: \"a\xff\"}\nspec: {}\n", "Error parsing YAML: invalid leading UTF-8 octet"},
		{"order targetPort before defaultBridge", "kind: Service\nmetadata: {}\nspec: {defaultBridge: 1, targetPort: x}\n",
			"Field 'targetPort' is not of a type(s) integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeYAML([]byte(tt.doc))
			wantMessage(t, err, tt.want)
		})
	}
}

func TestDecodeYAMLIntegerForms(t *testing.T) {
	tests := []struct {
		value string
		want  int
	}{
		{"8080", 8080},
		{"8080.0", 8080},
		{"!!int 8080", 8080},
		{"0x1F90", 8080},
		{"99999999999999999999999", math.MaxInt}, // clamped; the range check rejects it
		{"-99999999999999999999999", math.MinInt},
	}
	for _, tt := range tests {
		p, err := DecodeYAML([]byte("kind: Service\nmetadata: {}\nspec: {targetPort: " + tt.value + "}\n"))
		wantMessage(t, err, "")
		if p.TargetPort == nil || *p.TargetPort != tt.want {
			t.Errorf("%s: targetPort = %v, want %d", tt.value, p.TargetPort, tt.want)
		}
	}
}

func TestDecodeYAMLExplicitStringTagIsAString(t *testing.T) {
	p, err := DecodeYAML([]byte("kind: Service\nmetadata: {name: !!str 123, tags: [!!str 1, '2']}\nspec: {}\n"))
	wantMessage(t, err, "")
	if *p.Name != "123" || !reflect.DeepEqual(*p.Tags, []string{"1", "2"}) {
		t.Fatalf("got %+v", p)
	}
}

func TestDecodeYAMLFollowsAFewAliases(t *testing.T) {
	doc := `kind: Service
metadata:
  name: &n checkout
  tags: &t [shop, *n]
spec:
  type: microservice
  resource: orders/checkout
  targetPort: &p 8080
  servicePort: *p
`
	p, err := DecodeYAML([]byte(doc))
	wantMessage(t, err, "")
	if *p.ServicePort != 8080 || !reflect.DeepEqual(*p.Tags, []string{"shop", "checkout"}) {
		t.Fatalf("got %+v", p)
	}
}

// billionLaughs builds the classic alias bomb: each level references the
// previous one ten times, so full expansion would be 10^levels nodes.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		b.WriteString("a")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": &a")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a")
			b.WriteString(strconv.Itoa(i - 1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("kind: Service\nmetadata: {name: x}\nspec: {}\n")
	return b.String()
}

func TestDecodeYAMLRejectsAliasBombs(t *testing.T) {
	_, err := DecodeYAML([]byte(billionLaughs(9)))
	wantMessage(t, err, "Error parsing YAML: more than 20 aliases")
}

func TestDecodeYAMLRejectsAliasBombInTags(t *testing.T) {
	// Even within the budget, tags never expand nested aliases: an alias
	// to a list is not a string.
	doc := "kind: Service\nspec: {distribution: &b [&a [x, x], *a]}\nmetadata: {tags: [*b]}\n"
	_, err := DecodeYAML([]byte(doc))
	wantMessage(t, err, "Field 'tags[0]' is not of a type(s) string")
}

func TestDecodeYAMLRejectsDeepNesting(t *testing.T) {
	doc := "kind: Service\nmetadata: {}\nspec: {distribution: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}\n"
	_, err := DecodeYAML([]byte(doc))
	wantMessage(t, err, "Error parsing YAML: nesting deeper than 32 levels")
	// Nesting within the limit is fine.
	doc = "kind: Service\nmetadata: {}\nspec: {distribution: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "}\n"
	_, err = DecodeYAML([]byte(doc))
	wantMessage(t, err, "")
}

func TestDecodeYAMLSelfReferencingAnchorDoesNotLoop(t *testing.T) {
	_, err := DecodeYAML([]byte("kind: Service\nmetadata: &m {tags: *m}\nspec: {}\n"))
	if err == nil {
		t.Fatal("want an error for a self-referencing anchor")
	}
}

func TestCheckYAMLName(t *testing.T) {
	tests := []struct {
		name string
		p    Patch
		path string
		want string
	}{
		{"match", Patch{Name: ptr("checkout")}, "checkout", ""},
		{"mismatch", Patch{Name: ptr("other")}, "checkout", "Service name in YAML (other) doesn't match endpoint path (checkout)"},
		{"missing name", Patch{}, "checkout", "Service name in YAML (undefined) doesn't match endpoint path (checkout)"},
		{"empty name", Patch{Name: ptr("")}, "checkout", "Service name in YAML () doesn't match endpoint path (checkout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantMessage(t, CheckYAMLName(tt.p, tt.path), tt.want) })
	}
}
