// Package routerconfig is the skrouterd bridge model: the tcpListener and
// tcpConnector objects svcbridge writes, and edits of a router's
// microservice config document that keep every key svcbridge does not own.
package routerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Listener is a tcpListener. Ports are strings, as the router expects.
type Listener struct {
	Name    string `json:"name"`
	Port    string `json:"port"`
	Address string `json:"address"`
}

// Connector is a tcpConnector.
type Connector struct {
	Name      string `json:"name"`
	Host      string `json:"host"`
	Port      string `json:"port"`
	Address   string `json:"address"`
	ProcessID string `json:"processId"`
}

// ListenerSuffix marks listeners svcbridge owns: every tcpListener whose name
// ends with it is rebuilt from the current services (seed 001).
const ListenerSuffix = "-listener"

// ConnectorSuffix is appended to the service name to name its connector.
const ConnectorSuffix = "-connector"

// ListenerName and ConnectorName name a service's router objects.
func ListenerName(service string) string  { return service + ListenerSuffix }
func ConnectorName(service string) string { return service + ConnectorSuffix }

// Empty is the document a new router starts with.
const Empty = `{"bridges":{"tcpConnectors":{},"tcpListeners":{}}}`

// Doc is a parsed router config. Unknown keys at every level survive a
// round trip untouched.
type Doc struct {
	top        map[string]json.RawMessage
	bridges    map[string]json.RawMessage
	listeners  map[string]json.RawMessage
	connectors map[string]json.RawMessage
}

// Parse reads a router config document; an empty input is an empty config.
func Parse(b []byte) (*Doc, error) {
	d := &Doc{top: map[string]json.RawMessage{}, bridges: map[string]json.RawMessage{},
		listeners: map[string]json.RawMessage{}, connectors: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(b, &d.top); err != nil {
		return nil, fmt.Errorf("router config is not a JSON object: %w", err)
	}
	if raw, ok := d.top["bridges"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &d.bridges); err != nil {
			return nil, fmt.Errorf("router config: bridges is not an object: %w", err)
		}
	}
	for key, m := range map[string]*map[string]json.RawMessage{"tcpListeners": &d.listeners, "tcpConnectors": &d.connectors} {
		if raw, ok := d.bridges[key]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, m); err != nil {
				return nil, fmt.Errorf("router config: bridges.%s is not an object: %w", key, err)
			}
		}
	}
	return d, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Marshal encodes the document. Map keys come out sorted, so equal documents
// encode to equal bytes and a caller can skip writes that change nothing.
func (d *Doc) Marshal() []byte {
	bridges := make(map[string]json.RawMessage, len(d.bridges)+2)
	for k, v := range d.bridges {
		bridges[k] = v
	}
	bridges["tcpListeners"] = mustMarshal(d.listeners)
	bridges["tcpConnectors"] = mustMarshal(d.connectors)
	top := make(map[string]json.RawMessage, len(d.top)+1)
	for k, v := range d.top {
		top[k] = v
	}
	top["bridges"] = mustMarshal(bridges)
	return mustMarshal(top)
}

// JSON is the listener as a router document holds it.
func (l Listener) JSON() json.RawMessage { return mustMarshal(l) }

// JSON is the connector as a router document holds it.
func (c Connector) JSON() json.RawMessage { return mustMarshal(c) }

// SameJSON reports whether two JSON texts hold the same tokens, formatting
// aside; not JSON is never the same.
func SameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of raw JSON and plain structs are marshalled
	}
	return b
}

// Kinds of the objects svcbridge holds on a router.
const (
	KindListener  = "listener"
	KindConnector = "connector"
)

// Held is one object svcbridge holds on a router. Objects are stored as
// rows beside the router's base document (what anyone else wrote there),
// so a change to one service writes one row, whatever the router holds.
// JSON is nil for an object recorded before objects were rows: it is then
// still in the base document.
type Held struct {
	Kind    string
	Service string
	JSON    json.RawMessage
}

// Name is the object's name in the document.
func (h Held) Name() string {
	if h.Kind == KindConnector {
		return ConnectorName(h.Service)
	}
	return ListenerName(h.Service)
}

func (d *Doc) objects(kind string) map[string]json.RawMessage {
	if kind == KindConnector {
		return d.connectors
	}
	return d.listeners
}

// Get returns the raw object of a kind named name, if present.
func (d *Doc) Get(kind, name string) (json.RawMessage, bool) {
	v, ok := d.objects(kind)[name]
	return v, ok
}

// Set puts a raw object of a kind under name.
func (d *Doc) Set(kind, name string, raw json.RawMessage) { d.objects(kind)[name] = raw }

// Delete removes the object of a kind named name and reports whether it
// was there.
func (d *Doc) Delete(kind, name string) bool {
	m := d.objects(kind)
	_, ok := m[name]
	delete(m, name)
	return ok
}

// Names lists the names of a kind's objects, sorted.
func (d *Doc) Names(kind string) []string {
	return slices.Sorted(maps.Keys(d.objects(kind)))
}

// Owned reports whether svcbridge owns every object of a kind with this
// name, whoever wrote it: every tcpListener named "...-listener" is
// rebuilt from the services (seed 001).
func Owned(kind, name string) bool {
	return kind == KindListener && strings.HasSuffix(name, ListenerSuffix)
}

// Assemble is the document a router pulls: its base with the objects
// svcbridge holds set over it. A base with nothing set over it is served
// as stored.
func Assemble(base []byte, held []Held) ([]byte, error) {
	d, err := Parse(base)
	if err != nil {
		return nil, err
	}
	set := false
	for _, h := range held {
		if h.JSON != nil {
			d.Set(h.Kind, h.Name(), h.JSON)
			set = true
		}
	}
	if !set {
		return base, nil
	}
	return d.Marshal(), nil
}
