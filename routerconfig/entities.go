package routerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Entity types of skrouterd's configuration, as its config file names them
// (its management names them with the schema's prefix, "io.skupper.router.").
const (
	EntityRouter       = "router"
	EntityListener     = "listener"
	EntityConnector    = "connector"
	EntityAddress      = "address"
	EntityLog          = "log"
	EntityTCPListener  = "tcpListener"
	EntityTCPConnector = "tcpConnector"
)

// Entity is one skrouterd configuration entity: a [type, attributes] pair
// of the router's config file, or what its management creates and lists.
type Entity struct {
	Type  string
	Name  string
	Attrs map[string]any
}

// Key names an entity among all of a router's: its type and name.
func (e Entity) Key() string { return e.Type + "/" + e.Name }

// docSections are the keys of an agent's router document that hold
// entities (the ioFog router microservice's config), and the entity type
// of each; "metadata" is the router entity itself. siteConfig (Skupper's
// site, no router entity) and sslProfiles (PEM contents, where the router
// wants files) are not carried to the router.
var docSections = []struct{ key, typ string }{
	{"listeners", EntityListener},
	{"connectors", EntityConnector},
	{"addresses", EntityAddress},
	{"logConfig", EntityLog},
}

// fileOrder is the order of entity types in a config file written by
// File: the router first, its own listeners and links, then the bridges.
var fileOrder = []string{EntityRouter, EntityListener, EntityConnector, EntityAddress, EntityLog, EntityTCPListener, EntityTCPConnector}

// Entities reads an agent's router document (object form) as the
// entities the router holds: metadata as the router, listeners,
// connectors, addresses and logConfig, and bridges.tcpListeners and
// bridges.tcpConnectors. Each map's key is its entity's name, also when
// the object lacks one. The order is File's.
func Entities(doc []byte) ([]Entity, error) {
	var top map[string]json.RawMessage
	if len(bytes.TrimSpace(doc)) > 0 {
		if err := json.Unmarshal(doc, &top); err != nil {
			return nil, fmt.Errorf("router config is not a JSON object: %w", err)
		}
	}
	var out []Entity
	if raw, ok := top["metadata"]; ok && !isNull(raw) {
		attrs, err := attributes(raw)
		if err != nil {
			return nil, fmt.Errorf("router config: metadata: %w", err)
		}
		id, _ := attrs["id"].(string)
		out = append(out, Entity{Type: EntityRouter, Name: id, Attrs: attrs})
	}
	for _, s := range docSections {
		es, err := section(top[s.key], s.typ)
		if err != nil {
			return nil, fmt.Errorf("router config: %s: %w", s.key, err)
		}
		out = append(out, es...)
	}
	d, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		typ     string
		objects map[string]json.RawMessage
	}{{EntityTCPListener, d.listeners}, {EntityTCPConnector, d.connectors}} {
		raw, _ := json.Marshal(b.objects)
		es, err := section(raw, b.typ)
		if err != nil {
			return nil, fmt.Errorf("router config: bridges: %w", err)
		}
		out = append(out, es...)
	}
	sortEntities(out)
	return out, nil
}

// section reads a map of name to attributes as entities of typ.
func section(raw json.RawMessage, typ string) ([]Entity, error) {
	if raw == nil || isNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	out := make([]Entity, 0, len(m))
	for name, v := range m {
		attrs, err := attributes(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if _, ok := attrs["name"]; !ok && typ != EntityLog {
			attrs["name"] = name
		}
		out = append(out, Entity{Type: typ, Name: name, Attrs: attrs})
	}
	return out, nil
}

func attributes(raw json.RawMessage) (map[string]any, error) {
	var attrs map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&attrs); err != nil || attrs == nil {
		return nil, fmt.Errorf("not an object")
	}
	return attrs, nil
}

// FileEntities reads a skrouterd config file (a JSON array of [type,
// attributes] pairs, the Kubernetes hub's skrouterd.json) as entities, in
// the file's order; elements that are not such pairs are skipped.
func FileEntities(file []byte) ([]Entity, error) {
	pairs, err := HubEntries(file)
	if err != nil {
		return nil, err
	}
	var out []Entity
	for _, p := range pairs {
		if p.Kind == "" {
			continue
		}
		attrs, err := attributes(p.Object)
		if err != nil {
			continue
		}
		name := p.Name
		switch p.Kind {
		case EntityRouter:
			name, _ = attrs["id"].(string)
		case EntityLog:
			name, _ = attrs["module"].(string)
		}
		out = append(out, Entity{Type: p.Kind, Name: name, Attrs: attrs})
	}
	return out, nil
}

// File writes entities as a skrouterd config file, in File's type order,
// each type's by name: what `skrouterd -c` reads at start-up.
func File(entities []Entity) []byte {
	es := slices.Clone(entities)
	sortEntities(es)
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, e := range es {
		attrs, _ := json.Marshal(e.Attrs) // maps of JSON values
		fmt.Fprintf(&b, "  [%s, %s]", mustMarshal(e.Type), attrs)
		if i < len(es)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

func sortEntities(es []Entity) {
	rank := func(t string) int {
		if i := slices.Index(fileOrder, t); i >= 0 {
			return i
		}
		return len(fileOrder)
	}
	slices.SortStableFunc(es, func(a, b Entity) int {
		if d := rank(a.Type) - rank(b.Type); d != 0 {
			return d
		}
		if a.Type != b.Type {
			return strings.Compare(a.Type, b.Type)
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Same reports whether current (as the router lists it) has every
// attribute of e with the same value; attributes e does not set (the
// router's defaults, counters, status) are not compared. Values compare
// by their text: the router answers "10024" where a document may say
// 10024.
func (e Entity) Same(current Entity) bool {
	for k, want := range e.Attrs {
		got, ok := current.Attrs[k]
		if !ok || valueText(got) != valueText(want) {
			return false
		}
	}
	return true
}

func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}
