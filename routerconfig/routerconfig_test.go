package routerconfig

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseKeepsUnknownKeysThroughARewrite(t *testing.T) {
	in := `{"addresses":[{"prefix":"x"}],"bridges":{"tcpListeners":{"human":{"name":"human","port":"1"},"old-listener":{"name":"old-listener"}},
		"tcpConnectors":{"theirs":{"name":"theirs"},"gone-connector":{"name":"gone-connector"}},"httpListeners":{"h":{}}},"metadata":{"id":"r1"}}`
	d, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d.SetListeners([]Listener{{Name: "checkout-listener", Port: "10024", Address: "checkout"}})
	d.SetConnectors([]Connector{{Name: "checkout-connector", Host: "orders.checkout", Port: "8080", Address: "checkout", ProcessID: "p"}},
		[]string{"gone-connector", "checkout-connector"})
	var got map[string]any
	if err := json.Unmarshal(d.Marshal(), &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	json.Unmarshal([]byte(`{"addresses":[{"prefix":"x"}],"metadata":{"id":"r1"},"bridges":{
		"tcpListeners":{"human":{"name":"human","port":"1"},"checkout-listener":{"name":"checkout-listener","port":"10024","address":"checkout"}},
		"tcpConnectors":{"theirs":{"name":"theirs"},"checkout-connector":{"name":"checkout-connector","host":"orders.checkout","port":"8080","address":"checkout","processId":"p"}},
		"httpListeners":{"h":{}}}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rewrite:\n got %v\nwant %v", got, want)
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
