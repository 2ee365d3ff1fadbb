package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// wantError fails unless err is an *Error with exactly want (want == ""
// means no error).
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error %q", err, err, want)
	}
	if e.Message != want {
		t.Fatalf("message = %q\nwant      %q", e.Message, want)
	}
}

// The kind rule is the reference's for every kind: an empty kind is
// missing, any other must be one of the reader's kinds, exactly.
func TestReadYAMLKind(t *testing.T) {
	kinds := []string{"Agent", "AgentConfig"}
	tests := []struct{ name, doc, want string }{
		{"first kind", "kind: Agent\n", ""},
		{"second kind", "kind: AgentConfig\n", ""},
		{"apiVersion is not checked", "apiVersion: whatever/v9\nkind: Agent\n", ""},
		{"empty stream", "", "Invalid YAML format: missing kind field"},
		{"root is a list", "- kind: Agent\n", "Invalid YAML format: missing kind field"},
		{"no kind", "metadata: {}\n", "Invalid YAML format: missing kind field"},
		{"kind false", "kind: false\n", "Invalid YAML format: missing kind field"},
		{"other kind", "kind: Service\n", "Invalid kind Service"},
		{"case-sensitive", "kind: agent\n", "Invalid kind agent"},
		{"kind is a sequence", "kind: [Agent]\n", "Invalid kind (a sequence)"},
		{"kind is a quoted number", "kind: '5'\n", "Invalid kind 5"},
		{"unknown top-level key", "kind: Agent\nstatus: {}\n", "Unknown field 'status' (line 2)"},
		{"two documents", "kind: Agent\n---\nkind: Agent\n", "Error parsing YAML: expected a single document in the stream, but found more"},
		{"merge key at the top", "a: &a {kind: Agent}\n<<: *a\n", "Error parsing YAML: line 2: merge keys ('<<') are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			_, err := ReadYAML([]byte(tt.doc), kinds, func(*yaml.Node) (int, error) { called = true; return 0, nil })
			wantError(t, err, tt.want)
			if called != (tt.want == "") {
				t.Fatalf("read called = %v, want it called only for a valid document", called)
			}
		})
	}
}

// A panic while reading fields is a client error, not a crash.
func TestReadYAMLPanicIsAClientError(t *testing.T) {
	_, err := ReadYAML([]byte("kind: Agent\n"), []string{"Agent"}, func(*yaml.Node) (int, error) { panic("boom") })
	wantError(t, err, "Error parsing YAML: boom")
}

func TestYAMLScalars(t *testing.T) {
	spec := func(t *testing.T, doc string) *yaml.Node {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatal(err)
		}
		return YAMLValue(n.Content[0], "v")
	}
	tests := []struct {
		name, doc string
		read      func(*yaml.Node) (any, error)
		want      any
		err       string
	}{
		{"bool", "v: true", boolOf, true, ""},
		{"bool false", "v: false", boolOf, false, ""},
		{"quoted bool", "v: 'true'", boolOf, nil, "Field 'v' is not of a type(s) boolean"},
		{"null bool", "v: ~", boolOf, nil, "Field 'v' is not of a type(s) boolean"},
		{"absent bool", "w: 1", boolOf, nil, ""},
		{"int", "v: 8080", intOf, 8080, ""},
		{"integral float", "v: 8080.0", intOf, 8080, ""},
		{"fraction", "v: 80.5", intOf, nil, "Field 'v' is not of a type(s) integer"},
		{"quoted int", "v: '80'", intOf, nil, "Field 'v' is not of a type(s) integer"},
		{"string", "v: a", stringOf, "a", ""},
		{"number as string", "v: 12", stringOf, nil, "Field 'v' is not of a type(s) string"},
		{"control character", "v: \"a\\tb\"", stringOf, nil, "Field 'v' contains a control character (U+0009)"},
		{"list", "v: [a, b]", listOf, []string{"a", "b"}, ""},
		{"absent list is empty", "w: 1", listOf, []string{}, ""},
		{"repeated item", "v: [a, a]", listOf, nil, `Field 'v[1]' repeats v[0] ("a"): each entry may be given once`},
		{"item not a string", "v: [a, 1]", listOf, nil, "Field 'v[1]' is not of a type(s) string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.read(spec(t, tt.doc))
			wantError(t, err, tt.err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// deref turns a reader's (*T, error) into (T or nil, error) for the tables.
func deref[T any](p *T, err error) (any, error) {
	if p == nil {
		return nil, err
	}
	return *p, err
}

func boolOf(n *yaml.Node) (any, error)   { return deref(YAMLBool(n, "v")) }
func intOf(n *yaml.Node) (any, error)    { return deref(YAMLInt(n, "v")) }
func stringOf(n *yaml.Node) (any, error) { return deref(YAMLString(n, "v")) }
func listOf(n *yaml.Node) (any, error)   { return deref(YAMLStringList(n, "v")) }

func TestJSONReaders(t *testing.T) {
	known := NewFieldSet("v", "w")
	tests := []struct {
		name, body string
		read       func(map[string]json.RawMessage) (any, error)
		want       any
		err        string
	}{
		{"string", `{"v":"a"}`, jsonString, "a", ""},
		{"absent", `{"w":1}`, jsonString, nil, ""},
		{"null is not absent", `{"v":null}`, jsonString, nil, "Field 'v' is not of a type(s) string"},
		{"number as string", `{"v":1}`, jsonString, nil, "Field 'v' is not of a type(s) string"},
		{"control character", `{"v":"a\u0000"}`, jsonString, nil, "Field 'v' contains a control character (U+0000)"},
		{"bool", `{"v":true}`, jsonBool, true, ""},
		{"string as bool", `{"v":"true"}`, jsonBool, nil, "Field 'v' is not of a type(s) boolean"},
		{"typed list", `{"v":["a","b"]}`, jsonStrings, []string{"a", "b"}, ""},
		{"typed list item", `{"v":["a",1]}`, jsonStrings, nil, "Field 'v' is not of a type(s) array of strings"},
		{"typed list repeat", `{"v":["a","a"]}`, jsonStrings, nil, `Field 'v[1]' repeats v[0] ("a"): each entry may be given once`},
		{"list", `{"v":["a"]}`, jsonList, []string{"a"}, ""},
		{"list not an array", `{"v":"a"}`, jsonList, nil, "Field 'v' is not of a type(s) array"},
		{"list item", `{"v":["a",{}]}`, jsonList, nil, "Field 'v[1]' is not of a type(s) string"},
		{"int", `{"v":8080}`, jsonInt, 8080, ""},
		{"integral exponent", `{"v":8.08e3}`, jsonInt, 8080, ""},
		{"fraction", `{"v":80.5}`, jsonInt, nil, "Field 'v' is not of a type(s) integer"},
		{"string as int", `{"v":"80"}`, jsonInt, nil, "Field 'v' is not of a type(s) integer"},
		{"unknown key", `{"v":"a","x":1}`, jsonString, nil, "Unknown field 'x'"},
		{"unknown keys sorted", `{"z":1,"x":1}`, jsonString, nil, "Unknown fields 'x', 'z'"},
		{"duplicated key", `{"v":"a","v":"b"}`, jsonString, nil, "Invalid JSON: duplicated key 'v'"},
		{"nested duplicated key", `{"v":{"a":1,"a":2}}`, jsonString, nil, "Invalid JSON: duplicated key 'v.a'"},
		{"invalid UTF-8", "{\"v\":\"a\xff\"}", jsonString, nil, "Field 'v' is not valid UTF-8"},
		{"not an object", `[]`, jsonString, nil, "Field 'instance' is not of a type(s) object"},
		{"empty body", ``, jsonString, nil, "Invalid JSON: empty body"},
		{"two values", `{} {}`, jsonString, nil, "Invalid JSON: unexpected data after the top-level value"},
		{"lone high surrogate", `{"v":"a\ud800"}`, jsonString, nil, `Field 'v' contains an unpaired UTF-16 surrogate (\uD800)`},
		{"lone low surrogate", `{"v":"\uDC00\ud83d"}`, jsonString, nil, `Field 'v' contains an unpaired UTF-16 surrogate (\uDC00)`},
		{"high surrogate then no low", `{"v":"\ud83d\u0041"}`, jsonString, nil, `Field 'v' contains an unpaired UTF-16 surrogate (\uD83D)`},
		{"surrogate pair", `{"v":"\ud83d\ude00"}`, jsonString, "\U0001F600", ""},
		{"escaped backslash before u", `{"v":"\\ud800"}`, jsonString, `\ud800`, ""},
		{"U+FFFD as written", `{"v":"\ufffd�"}`, jsonString, "��", ""},
		{"surrogate in a key", `{"v":"a","\udfff":1}`, jsonString, nil, `Field '�' contains an unpaired UTF-16 surrogate (\uDFFF)`},
		{"surrogate deep in a field", `{"w":[{"y":["\ud800"]}]}`, jsonString, nil, `Field 'w[0].y[0]' contains an unpaired UTF-16 surrogate (\uD800)`},
		{"control character anywhere", `{"w":{"y":"\u001b"}}`, jsonString, nil, "Field 'w.y' contains a control character (U+001B)"},
		{"bidi override anywhere", `{"w":["\u202e"]}`, jsonString, nil, "Field 'w[0]' contains an invisible format character (U+202E)"},
		{"an unknown field is refused unread", `{"x":[{"y":["\ud800"]}]}`, jsonString, nil, "Unknown field 'x'"},
		{"at the depth limit", `{"v":"a","w":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`, jsonString, "a", ""},
		{"beyond the depth limit", `{"w":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, jsonString, nil, "Invalid JSON: nesting deeper than 32 levels"},
		{"brackets in strings do not nest", `{"v":"` + strings.Repeat("[{\\\"", 40) + `"}`, jsonString, strings.Repeat(`[{"`, 40), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := ReadJSONFields([]byte(tt.body), known)
			var got any
			if err == nil {
				got, err = tt.read(obj)
			}
			wantError(t, err, tt.err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func jsonString(o map[string]json.RawMessage) (any, error) {
	return deref(JSONField[string](o, "v", "string"))
}
func jsonBool(o map[string]json.RawMessage) (any, error) {
	return deref(JSONField[bool](o, "v", "boolean"))
}
func jsonStrings(o map[string]json.RawMessage) (any, error) {
	return deref(JSONField[[]string](o, "v", "array of strings"))
}
func jsonList(o map[string]json.RawMessage) (any, error) { return deref(JSONStringList(o, "v")) }
func jsonInt(o map[string]json.RawMessage) (any, error)  { return deref(JSONInt(o, "v")) }

// The nesting rule is one for both readers: MaxDepth objects or mappings
// (the outermost is 1) are fine, one more is refused.
func TestNestingProblem(t *testing.T) {
	for depth, want := range map[int]string{0: "", 1: "", MaxDepth: "", MaxDepth + 1: "nesting deeper than 32 levels", 9990: "nesting deeper than 32 levels"} {
		if got := nestingProblem(depth); got != want {
			t.Errorf("nestingProblem(%d) = %q, want %q", depth, got, want)
		}
	}
	nested := func(open, close string, n int) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{nested("[", "]", MaxDepth), ""},
		{nested(`{"a":`, "1}", MaxDepth), ""},
		{nested("[", "]", MaxDepth+1), "nesting deeper than 32 levels"},
		{nested(`{"a":`, "1}", MaxDepth+1), "nesting deeper than 32 levels"},
		{nested(`{"[[":[`, "]}", MaxDepth/2), ""},
	} {
		if got := jsonNesting(tc.body); got != tc.want {
			t.Errorf("jsonNesting(%.40s...) = %q, want %q", tc.body, got, tc.want)
		}
	}
	yamlDoc := func(n int) []byte { return []byte("kind: Agent\nspec: " + string(nested("[", "]", n-1)) + "\n") }
	_, err := ReadYAML(yamlDoc(MaxDepth), []string{"Agent"}, func(*yaml.Node) (int, error) { return 0, nil })
	wantError(t, err, "")
	_, err = ReadYAML(yamlDoc(MaxDepth+1), []string{"Agent"}, func(*yaml.Node) (int, error) { return 0, nil })
	wantError(t, err, "Error parsing YAML: nesting deeper than 32 levels")
}

// BenchmarkDeepJSON compares a hostile body nested 9,990 deep with one
// nested 10 deep (issue 37: the walk built every value's path, O(d²), 1 s
// and 160 MB for 20 KB): refused before decoding, it must cost no more
// than its bytes (compare allocs/op and B/op of the two).
func BenchmarkDeepJSON(b *testing.B) {
	for _, depth := range []int{10, 9990} {
		body := []byte(`{"v":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = readJSONObject(body, nil)
			}
		})
	}
}
