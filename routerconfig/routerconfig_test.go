package routerconfig

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAssembleKeepsUnknownKeys(t *testing.T) {
	base := `{"addresses":[{"prefix":"x"}],"bridges":{"tcpListeners":{"human":{"name":"human","port":"1"}},
		"tcpConnectors":{"theirs":{"name":"theirs"}},"httpListeners":{"h":{}}},"metadata":{"id":"r1"}}`
	held := []Held{
		{Kind: KindListener, Service: "checkout", JSON: json.RawMessage(`{"name":"checkout-listener","port":"10024","address":"checkout"}`)},
		{Kind: KindConnector, Service: "checkout", JSON: json.RawMessage(`{"name":"checkout-connector","host":"orders.checkout","port":"8080","address":"checkout","processId":"p"}`)},
		// Recorded before objects were rows: its object is the base's.
		{Kind: KindConnector, Service: "legacy"},
	}
	doc, err := Assemble([]byte(base), held)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	json.Unmarshal([]byte(`{"addresses":[{"prefix":"x"}],"metadata":{"id":"r1"},"bridges":{
		"tcpListeners":{"human":{"name":"human","port":"1"},"checkout-listener":{"name":"checkout-listener","port":"10024","address":"checkout"}},
		"tcpConnectors":{"theirs":{"name":"theirs"},"checkout-connector":{"name":"checkout-connector","host":"orders.checkout","port":"8080","address":"checkout","processId":"p"}},
		"httpListeners":{"h":{}}}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assembled:\n got %v\nwant %v", got, want)
	}
	// Nothing set over the base: served exactly as stored.
	if doc, _ := Assemble([]byte(base), held[2:]); string(doc) != base {
		t.Errorf("base alone came back as %s", doc)
	}
	if _, err := Assemble([]byte("[]"), held); err == nil {
		t.Error("a base that is not a router config assembled")
	}
}

func TestOwnedIsEveryListenerNamedLikeOurs(t *testing.T) {
	for _, c := range []struct {
		kind, name string
		want       bool
	}{
		{KindListener, "x-listener", true},
		{KindListener, "mine", false},
		{KindConnector, "x-connector", false}, // connectors: only those recorded as ours
		{KindConnector, "x-listener", false},
	} {
		if got := Owned(c.kind, c.name); got != c.want {
			t.Errorf("Owned(%s, %s) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}

func TestEmptyAndMissingBridgesBecomeTheEmptyDocument(t *testing.T) {
	for _, in := range []string{"", "{}", `{"bridges":null}`, Empty} {
		d, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := string(d.Marshal()); got != Empty {
			t.Errorf("%q: got %s, want %s", in, got, Empty)
		}
	}
}

func TestParseRejectsWhatIsNotARouterConfig(t *testing.T) {
	for _, in := range []string{"[]", `{"bridges":[]}`, `{"bridges":{"tcpListeners":"x"}}`, "{"} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%q parsed, want an error", in)
		}
	}
}

func TestObjectsEncodeInTheSeedsKeyOrder(t *testing.T) {
	l, _ := json.Marshal(Listener{Name: "checkout-listener", Port: "10024", Address: "checkout"})
	if string(l) != `{"name":"checkout-listener","port":"10024","address":"checkout"}` {
		t.Errorf("listener %s", l)
	}
	c, _ := json.Marshal(Connector{Name: "checkout-connector", Host: "orders.checkout", Port: "8080", Address: "checkout", ProcessID: "11111111-1111-1111-1111-111111111111"})
	if string(c) != `{"name":"checkout-connector","host":"orders.checkout","port":"8080","address":"checkout","processId":"11111111-1111-1111-1111-111111111111"}` {
		t.Errorf("connector %s", c)
	}
}

func TestSameJSONIgnoresFormattingOnly(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[2]}`, "{ \"a\": 1,\n \"b\": [ 2 ] }", true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false}, // key order is content
		{`{"a":1}`, `{"a":"1"}`, false},
		{`[]`, ``, false}, // not JSON is never the same
		{`{`, `{`, false},
	} {
		if got := SameJSON([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("SameJSON(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
