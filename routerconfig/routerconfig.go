// Package routerconfig is the skrouterd bridge model: the tcpListener and
// tcpConnector objects svcbridge writes, and edits of a router's
// microservice config document that keep every key svcbridge does not own.
package routerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
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

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of raw JSON and plain structs are marshalled
	}
	return b
}

// Listener returns the raw tcpListener named name, if present.
func (d *Doc) Listener(name string) (json.RawMessage, bool) {
	v, ok := d.listeners[name]
	return v, ok
}

// Connector returns the raw tcpConnector named name, if present.
func (d *Doc) Connector(name string) (json.RawMessage, bool) {
	v, ok := d.connectors[name]
	return v, ok
}

// ListenerNames and ConnectorNames list the entries, sorted.
func (d *Doc) ListenerNames() []string  { return sortedKeys(d.listeners) }
func (d *Doc) ConnectorNames() []string { return sortedKeys(d.connectors) }

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SetListeners replaces every listener svcbridge owns (name ends with
// ListenerSuffix) with want; other listeners stay.
func (d *Doc) SetListeners(want []Listener) {
	for name := range d.listeners {
		if strings.HasSuffix(name, ListenerSuffix) {
			delete(d.listeners, name)
		}
	}
	for _, l := range want {
		d.listeners[l.Name] = mustMarshal(l)
	}
}

// SetConnectors removes the connectors named in owned that are not in want,
// then writes want. Connectors svcbridge did not write are left alone.
func (d *Doc) SetConnectors(want []Connector, owned []string) {
	keep := make(map[string]bool, len(want))
	for _, c := range want {
		keep[c.Name] = true
	}
	for _, name := range owned {
		if !keep[name] {
			delete(d.connectors, name)
		}
	}
	for _, c := range want {
		d.connectors[c.Name] = mustMarshal(c)
	}
}
