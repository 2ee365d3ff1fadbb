package routerconfig

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Seed 000's Kubernetes hub file, written as the seed shows it.
const seedHub = `[
  ["tcpListener", {
    "name": "checkout-listener",
    "port": "10024",
    "address": "checkout"
  }],
  ["tcpConnector", {
    "name": "checkout-connector",
    "host": "payments.payments.svc.cluster.local",
    "port": "8080",
    "address": "checkout",
    "processId": "payments.payments.svc.cluster.local-k8s-8080"
  }]
]`

// What the reference controller writes for it (JSON.stringify(pairs, null, 2)).
const seedHubFormatted = `[
  [
    "tcpListener",
    {
      "name": "checkout-listener",
      "port": "10024",
      "address": "checkout"
    }
  ],
  [
    "tcpConnector",
    {
      "name": "checkout-connector",
      "host": "payments.payments.svc.cluster.local",
      "port": "8080",
      "address": "checkout",
      "processId": "payments.payments.svc.cluster.local-k8s-8080"
    }
  ]
]`

var (
	seedListener  = Listener{Name: "checkout-listener", Port: "10024", Address: "checkout"}
	seedConnector = Connector{Name: "checkout-connector", Host: "payments.payments.svc.cluster.local",
		Port: "8080", Address: "checkout", ProcessID: "payments.payments.svc.cluster.local-k8s-8080"}
)

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return b.String()
}

func TestUpsertPairs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		raw        string
		listeners  []Listener
		connectors []Connector
		want       string // compared compact, unless wantExact
		wantExact  bool
	}{
		{
			name: "seed file from nothing", raw: "",
			listeners: []Listener{seedListener}, connectors: []Connector{seedConnector},
			want: seedHubFormatted, wantExact: true,
		},
		{
			name: "seed file from an empty array", raw: "[]",
			listeners: []Listener{seedListener}, connectors: []Connector{seedConnector},
			want: seedHubFormatted, wantExact: true,
		},
		{
			name: "seed file upserted again is the same file, reformatted", raw: seedHub,
			listeners: []Listener{seedListener}, connectors: []Connector{seedConnector},
			want: seedHubFormatted, wantExact: true,
		},
		{
			name: "nothing to write reformats only", raw: seedHub,
			want: seedHubFormatted, wantExact: true,
		},
		{
			name: "update in place keeps position and unknown members in order",
			raw: `[["router",{"id":"hub","mode":"interior"}],` +
				`["tcpListener",{"address":"checkout","siteId":"default-router","name":"checkout-listener","port":"10000"}],` +
				`["listener",{"name":"interior","port":55671}]]`,
			listeners: []Listener{seedListener},
			want: `[["router",{"id":"hub","mode":"interior"}],` +
				`["tcpListener",{"address":"checkout","siteId":"default-router","name":"checkout-listener","port":"10024"}],` +
				`["listener",{"name":"interior","port":55671}]]`,
		},
		{
			name:      "new pairs are appended, other pairs and elements kept verbatim",
			raw:       `[["router",{"id":"hub","note":"a\u003cb & c","n":1.50}],"not a pair",42,["tcpListener"],["tcpListener",{"name":7}],["sslProfile",{"name":"checkout-listener"}]]`,
			listeners: []Listener{seedListener},
			want: `[["router",{"id":"hub","note":"a\u003cb & c","n":1.50}],"not a pair",42,["tcpListener"],["tcpListener",{"name":7}],["sslProfile",{"name":"checkout-listener"}],` +
				`["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}]]`,
		},
		{
			name: "duplicates left by the reference controller collapse onto the first",
			raw: `[["tcpListener",{"name":"checkout-listener","port":"1","address":"checkout"}],` +
				`["tcpConnector",{"name":"checkout-connector"}],` +
				`["tcpListener",{"name":"checkout-listener","port":"2","address":"checkout"}]]`,
			listeners: []Listener{seedListener},
			want: `[["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}],` +
				`["tcpConnector",{"name":"checkout-connector"}]]`,
		},
		{
			name:       "a listener and a connector never match each other",
			raw:        `[["tcpConnector",{"name":"x","host":"h","port":"1","address":"x","processId":"p"}]]`,
			listeners:  []Listener{{Name: "x", Port: "2", Address: "x"}},
			connectors: []Connector{{Name: "x", Host: "h2", Port: "1", Address: "x", ProcessID: "p"}},
			want: `[["tcpConnector",{"name":"x","host":"h2","port":"1","address":"x","processId":"p"}],` +
				`["tcpListener",{"name":"x","port":"2","address":"x"}]]`,
		},
		{
			name:      "the same listener twice in one call is written once",
			raw:       `[]`,
			listeners: []Listener{{Name: "a-listener", Port: "1", Address: "a"}, {Name: "a-listener", Port: "2", Address: "a"}},
			want:      `[["tcpListener",{"name":"a-listener","port":"2","address":"a"}]]`,
		},
		{
			name:      "no HTML escaping in written values",
			raw:       `null`,
			listeners: []Listener{{Name: "a&b-listener", Port: "1", Address: "a<b>"}},
			want:      `[["tcpListener",{"name":"a&b-listener","port":"1","address":"a<b>"}]]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UpsertPairs([]byte(tc.raw), tc.listeners, tc.connectors)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantExact {
				if string(got) != tc.want {
					t.Errorf("got\n%s\nwant\n%s", got, tc.want)
				}
				return
			}
			if c := compactJSON(t, string(got)); c != tc.want {
				t.Errorf("got\n%s\nwant\n%s", c, tc.want)
			}
			// Always two-space indented, as the reference writes it.
			var indented bytes.Buffer
			_ = json.Indent(&indented, []byte(tc.want), "", "  ")
			if string(got) != indented.String() {
				t.Errorf("not indented with two spaces:\n%s", got)
			}
		})
	}
}

func TestRemovePairs(t *testing.T) {
	const hub = `[["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}],` +
		`["router",{"id":"hub"}],` +
		`["tcpConnector",{"name":"checkout-listener"}],` +
		`["tcpListener",{"name":"ssh-listener","port":"10025","address":"ssh"}],` +
		`["tcpListener",{"name":"checkout-listener","port":"9","address":"checkout"}]]`
	for _, tc := range []struct {
		name  string
		raw   string
		kind  string
		names []string
		want  string
	}{
		{"every pair of that kind and name, duplicates too", hub, PairListener, []string{"checkout-listener"},
			`[["router",{"id":"hub"}],["tcpConnector",{"name":"checkout-listener"}],["tcpListener",{"name":"ssh-listener","port":"10025","address":"ssh"}]]`},
		{"several names", hub, PairListener, []string{"checkout-listener", "ssh-listener"},
			`[["router",{"id":"hub"}],["tcpConnector",{"name":"checkout-listener"}]]`},
		{"only that kind", hub, PairConnector, []string{"checkout-listener"},
			`[["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}],["router",{"id":"hub"}],` +
				`["tcpListener",{"name":"ssh-listener","port":"10025","address":"ssh"}],["tcpListener",{"name":"checkout-listener","port":"9","address":"checkout"}]]`},
		{"absent names change nothing", hub, PairListener, []string{"gone-listener"}, compactJSON(t, hub)},
		{"nothing named", hub, PairListener, nil, compactJSON(t, hub)},
		{"empty file", "", PairListener, []string{"checkout-listener"}, `[]`},
		{"the seed file", seedHub, PairConnector, []string{"checkout-connector"},
			`[["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RemovePairs([]byte(tc.raw), tc.kind, tc.names)
			if err != nil {
				t.Fatal(err)
			}
			if c := compactJSON(t, string(got)); c != tc.want {
				t.Errorf("got\n%s\nwant\n%s", c, tc.want)
			}
		})
	}
}

func TestHubInvalid(t *testing.T) {
	for _, raw := range []string{`{"bridges":{}}`, `[["tcpListener",{"name":"x"}]`, `"[]"`, `nope`} {
		if _, err := UpsertPairs([]byte(raw), []Listener{seedListener}, nil); err == nil || !strings.Contains(err.Error(), "skrouterd.json") {
			t.Errorf("UpsertPairs(%s) error = %v, want a skrouterd.json error", raw, err)
		}
		if _, err := RemovePairs([]byte(raw), PairListener, []string{"x"}); err == nil {
			t.Errorf("RemovePairs(%s) accepted it", raw)
		}
	}
	if _, err := UpsertPairs(nil, []Listener{{Port: "1"}}, nil); err == nil {
		t.Error("a listener without a name was accepted")
	}
}

func TestHubEntries(t *testing.T) {
	got, err := HubEntries([]byte(`[["tcpListener",{"name":"a-listener","port":"1"}],["router",{"id":"hub"}],"x",["tcpConnector",{"name":"b-connector"}]]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []HubEntry{
		{PairListener, "a-listener", json.RawMessage(`{"name":"a-listener","port":"1"}`)},
		{"router", "", json.RawMessage(`{"id":"hub"}`)},
		{"", "", json.RawMessage(`"x"`)},
		{PairConnector, "b-connector", json.RawMessage(`{"name":"b-connector"}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("entries = %+v", got)
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || got[i].Name != want[i].Name || string(got[i].Object) != string(want[i].Object) {
			t.Errorf("entry %d = {%s %s %s}, want {%s %s %s}", i, got[i].Kind, got[i].Name, got[i].Object, want[i].Kind, want[i].Name, want[i].Object)
		}
	}
}

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{seedHub, seedHubFormatted, true},
		{"", "[]", true},
		{" \n", "[\n]", true},
		{`[["a",{"x":1,"y":2}]]`, `[["a",{"y":2,"x":1}]]`, false},
		{`[]`, `[["a",{}]]`, false},
	} {
		if got := SameHub([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("SameHub(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
