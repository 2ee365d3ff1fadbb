package routerconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

// An agent's router document as the reference controller writes one, with
// seed 000's bridges.
const referenceDoc = `{
  "addresses": {"mc": {"prefix": "mc", "distribution": "multicast"}},
  "bridges": {
    "tcpConnectors": {"checkout-connector": {"name": "checkout-connector", "host": "orders.checkout", "port": "8080", "address": "checkout", "processId": "1111"}},
    "tcpListeners": {"checkout-listener": {"name": "checkout-listener", "port": "10024", "address": "checkout"}}
  },
  "connectors": {"hub-uuid": {"name": "hub-uuid", "role": "edge", "host": "hub.example.com", "port": "45671"}},
  "listeners": {"fog-amqp": {"name": "fog-amqp", "host": "127.0.0.1", "port": 5672, "role": "normal"}},
  "logConfig": {"ROUTER_CORE": {"enable": "error+", "module": "ROUTER_CORE"}},
  "metadata": {"id": "fog-uuid", "mode": "edge"},
  "siteConfig": {"name": "fog-uuid", "platform": "docker"},
  "sslProfiles": {"fog-site-server": {"name": "fog-site-server", "CaCert": "PEM"}}
}`

func TestEntities(t *testing.T) {
	es, err := Entities([]byte(referenceDoc))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range es {
		keys = append(keys, e.Key())
	}
	want := "router/fog-uuid listener/fog-amqp connector/hub-uuid address/mc log/ROUTER_CORE tcpListener/checkout-listener tcpConnector/checkout-connector"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("entities\n%s\nwant (router first, no site config nor PEM profiles)\n%s", got, want)
	}
	if es[1].Attrs["port"].(json.Number).String() != "5672" {
		t.Errorf("a number stays a number: %#v", es[1].Attrs["port"])
	}
	if _, ok := es[4].Attrs["name"]; ok {
		t.Errorf("a log entity gets no name: %v", es[4].Attrs)
	}
	for _, bad := range []string{`[]`, `{"listeners": []}`, `{"bridges": {"tcpListeners": {"x": 1}}}`, `{"metadata": "edge"}`} {
		if _, err := Entities([]byte(bad)); err == nil {
			t.Errorf("Entities(%s) took a document that is not a router's", bad)
		}
	}
	if es, err := Entities(nil); err != nil || len(es) != 0 {
		t.Errorf("an empty document holds nothing: %v %v", es, err)
	}
}

// TestFileRoundTrip: the start-up file File writes is what FileEntities
// (and the router) read back, entity for entity.
func TestFileRoundTrip(t *testing.T) {
	es, err := Entities([]byte(referenceDoc))
	if err != nil {
		t.Fatal(err)
	}
	file := File(es)
	if !strings.HasPrefix(string(file), "[\n  [\"router\", ") {
		t.Errorf("the router entity comes first:\n%s", file)
	}
	back, err := FileEntities(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(es) {
		t.Fatalf("%d entities back, want %d:\n%s", len(back), len(es), file)
	}
	for i := range es {
		if back[i].Key() != es[i].Key() || !es[i].Same(back[i]) || !back[i].Same(es[i]) {
			t.Errorf("entity %d: %+v back as %+v", i, es[i], back[i])
		}
	}
}

func TestSame(t *testing.T) {
	want := Entity{Type: EntityTCPListener, Name: "a", Attrs: map[string]any{"port": "10024", "address": "a"}}
	for _, tc := range []struct {
		current map[string]any
		same    bool
	}{
		{map[string]any{"port": "10024", "address": "a", "operStatus": "up"}, true},
		{map[string]any{"port": json.Number("10024"), "address": "a"}, true},
		{map[string]any{"port": "10025", "address": "a"}, false},
		{map[string]any{"address": "a"}, false},
	} {
		if got := want.Same(Entity{Attrs: tc.current}); got != tc.same {
			t.Errorf("Same(%v) = %v, want %v", tc.current, got, tc.same)
		}
	}
}

func TestWithSite(t *testing.T) {
	site := Site{ID: "edge-uuid", Mode: ModeEdge, Links: []Link{{Name: "hub-uuid", Host: "hub.example.com", Port: EdgePort, Role: RoleEdge}}}
	base := `{"bridges":{"tcpConnectors":{},"tcpListeners":{"x-listener":{"name":"x-listener","port":"1","address":"x"}}},` +
		`"metadata":{"helloMaxAgeSeconds":"3","id":"old","mode":"interior"},"listeners":{"old-edge":{"port":"45671"}},"sslProfiles":{"p":{}}}`
	out, changed, err := WithSite([]byte(base), site)
	if err != nil || !changed {
		t.Fatalf("WithSite: changed %v, %v", changed, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"metadata":    `{"helloMaxAgeSeconds":"3","id":"edge-uuid","mode":"edge"}`,
		"listeners":   `{"edge-uuid-amqp":{"host":"127.0.0.1","name":"edge-uuid-amqp","port":"5672","role":"normal"}}`,
		"connectors":  `{"hub-uuid":{"host":"hub.example.com","name":"hub-uuid","port":"45671","role":"edge"}}`,
		"sslProfiles": `{"p":{}}`,
		"bridges":     `{"tcpConnectors":{},"tcpListeners":{"x-listener":{"name":"x-listener","port":"1","address":"x"}}}`,
	} {
		if got := string(doc[key]); !SameJSON([]byte(got), []byte(want)) {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	again, changed, err := WithSite(out, site)
	if err != nil || changed || string(again) != string(out) {
		t.Errorf("the same site again changes the document: %v %v", changed, err)
	}
	if !HasSite(out) || HasSite([]byte(Empty)) {
		t.Errorf("HasSite: with a site %v, empty %v", HasSite(out), HasSite([]byte(Empty)))
	}
	interior, _, _ := WithSite([]byte(Empty), Site{ID: "hub-uuid", Mode: ModeInterior})
	for _, l := range []string{`"hub-uuid-inter-router"`, `"55671"`, `"hub-uuid-edge"`, `"45671"`} {
		if !strings.Contains(string(interior), l) {
			t.Errorf("an interior router listens for other routers (%s): %s", l, interior)
		}
	}
	if _, _, err := WithSite([]byte(`{"metadata":[]}`), site); err == nil {
		t.Error("a metadata that is not an object was overwritten")
	}
}

func TestDecodeReport(t *testing.T) {
	r, err := DecodeReport([]byte(`{"version":"\"3-x\"","lastUpdated":42,"error":"","tcpListeners":2,"tcpConnectors":1,
		"failed":[{"type":"tcpListener","name":"a-listener","reason":"Address already in use"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != `"3-x"` || *r.LastUpdated != 42 || r.TCPListeners != 2 || len(r.Failed) != 1 || r.Failed[0].Reason != "Address already in use" {
		t.Errorf("decoded %+v", r)
	}
	if r, err := DecodeReport([]byte(`{"version":"v"}`)); err != nil || r.LastUpdated != nil || r.Failed == nil {
		t.Errorf("a report without an acknowledgement: %+v %v", r, err)
	}
	for body, want := range map[string]string{
		`{}`:                                "version",
		`{"version":"v","color":1}`:         "color",
		`{"version":"v","lastUpdated":-1}`:  "lastUpdated",
		`{"version":"v","tcpListeners":-1}`: "tcpListeners",
		`{"version":"v","failed":{}}`:       "failed",
		`{"version":"v","failed":[{"type":"router","name":"r","reason":"x"}]}`: "failed[0]",
		`{"version":"v","failed":[{"type":"tcpListener","name":"r"}]}`:         "reason",
		`{"version":"` + strings.Repeat("v", MaxReportVersion+1) + `"}`:        "version",
		`{"version":"v","error":"a\u0000b"}`:                                   "error",
	} {
		if _, err := DecodeReport([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeReport(%.60s): %v, want an error naming %s", body, err, want)
		}
	}
}
