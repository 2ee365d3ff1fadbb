package routerconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// The hub router's config file on a Kubernetes control plane (seed 000,
// "Where each object is stored"): the second encoding of the same
// listeners and connectors as an agent's Doc.
const HubFileName = "skrouterd.json"

// Kinds of the [kind, object] pairs svcbridge writes in the hub file.
const (
	PairListener  = "tcpListener"
	PairConnector = "tcpConnector"
)

// The hub file is a JSON array of [kind, object] pairs, for example
//
//	[
//	  ["tcpListener", {"name": "checkout-listener", "port": "10024", "address": "checkout"}],
//	  ["router", {...}]
//	]
//
// UpsertPairs and RemovePairs edit the pairs svcbridge owns, found by kind
// and the object's "name", and keep everything else as it was: other pairs
// (in place, in order), unknown members of the objects they rewrite (in
// place), and every value they do not rewrite token for token. The output is
// indented with two spaces, as the reference controller writes it.

// hubPair is one element of the hub array.
type hubPair struct {
	raw   json.RawMessage   // as read; written back unless dirty
	elems []json.RawMessage // the elements, when raw is an array
	kind  string            // elems[0], when a string and elems[1] is an object
	name  string            // elems[1].name, when a string
	obj   *object           // elems[1], when kind is set
	dirty bool
}

// object is a JSON object that keeps its members' order and raw values.
type object struct {
	keys   []string
	values map[string]json.RawMessage
}

func parseObject(raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	o := &object{values: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(key, v)
	}
	return o, nil
}

// set replaces the value of key in place, or appends the member. A
// duplicate key keeps its first position and the last value, as
// JSON.parse would read it.
func (o *object) set(key string, v json.RawMessage) {
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
}

func (o *object) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshalNoEscape(k))
		b.WriteByte(':')
		b.Write(o.values[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshalNoEscape is json.Marshal without HTML escaping (JSON.stringify
// does not escape <, > and &), and without the trailing newline.
func marshalNoEscape(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings and plain structs of strings are marshalled
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func parseHub(raw []byte) ([]*hubPair, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("hub router config %s is not a JSON array: %w", HubFileName, err)
	}
	pairs := make([]*hubPair, 0, len(elems))
	for _, e := range elems {
		p := &hubPair{raw: e}
		if json.Unmarshal(e, &p.elems) == nil && len(p.elems) >= 2 {
			var kind string
			if json.Unmarshal(p.elems[0], &kind) == nil {
				if obj, err := parseObject(p.elems[1]); err == nil {
					p.kind, p.obj = kind, obj
					_ = json.Unmarshal(obj.values["name"], &p.name)
				}
			}
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

func formatHub(pairs []*hubPair) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		if !p.dirty {
			b.Write(p.raw)
			continue
		}
		b.WriteByte('[')
		for j, e := range p.elems {
			if j > 0 {
				b.WriteByte(',')
			}
			if j == 1 {
				e = p.obj.marshal()
			}
			b.Write(e)
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("hub router config: %w", err)
	}
	return out.Bytes(), nil
}

// upsert writes v (a struct of strings) as the object of the first pair of
// kind and name, merged into the members that pair already has; later pairs
// of the same kind and name are dropped; without one, a pair is appended.
func upsert(pairs []*hubPair, kind, name string, v any) ([]*hubPair, error) {
	if name == "" {
		return nil, fmt.Errorf("hub router config: a %s needs a name", kind)
	}
	ours, err := parseObject(marshalNoEscape(v))
	if err != nil {
		return nil, err
	}
	var found *hubPair
	pairs = slices.DeleteFunc(pairs, func(p *hubPair) bool {
		if p.kind != kind || p.name != name {
			return false
		}
		if found != nil {
			return true // a duplicate (the reference controller appended without checking)
		}
		found = p
		return false
	})
	if found == nil {
		kindJSON := marshalNoEscape(kind)
		pairs = append(pairs, &hubPair{elems: []json.RawMessage{kindJSON, nil}, kind: kind, name: name, obj: ours, dirty: true})
		return pairs, nil
	}
	for _, k := range ours.keys {
		if !bytes.Equal(found.obj.values[k], ours.values[k]) {
			found.obj.set(k, ours.values[k])
			found.dirty = true
		}
	}
	return pairs, nil
}

// UpsertPairs writes each listener and connector into the hub file raw (an
// empty raw is an empty file), one pair per kind and name: an existing pair
// is updated in place (its other members kept), duplicates of it are
// dropped, and a new one is appended. Every other pair is kept as it was.
func UpsertPairs(raw []byte, listeners []Listener, connectors []Connector) ([]byte, error) {
	pairs, err := parseHub(raw)
	if err != nil {
		return nil, err
	}
	for _, l := range listeners {
		if pairs, err = upsert(pairs, PairListener, l.Name, l); err != nil {
			return nil, err
		}
	}
	for _, c := range connectors {
		if pairs, err = upsert(pairs, PairConnector, c.Name, c); err != nil {
			return nil, err
		}
	}
	return formatHub(pairs)
}

// RemovePairs drops every pair of kind (PairListener or PairConnector) whose
// object is named one of names, and keeps every other pair as it was.
func RemovePairs(raw []byte, kind string, names []string) ([]byte, error) {
	pairs, err := parseHub(raw)
	if err != nil {
		return nil, err
	}
	pairs = slices.DeleteFunc(pairs, func(p *hubPair) bool {
		return p.kind == kind && slices.Contains(names, p.name)
	})
	return formatHub(pairs)
}

// HubEntry is one [kind, object] pair of the hub file.
type HubEntry struct {
	Kind   string          // "" when the element is not a [string, object] pair
	Name   string          // the object's "name", when a string
	Object json.RawMessage // the object; for other elements, the whole element
}

// HubEntries lists the hub file's elements in order.
func HubEntries(raw []byte) ([]HubEntry, error) {
	pairs, err := parseHub(raw)
	if err != nil {
		return nil, err
	}
	out := make([]HubEntry, 0, len(pairs))
	for _, p := range pairs {
		e := HubEntry{Kind: p.kind, Name: p.name, Object: p.raw}
		if p.obj != nil {
			e.Object = p.elems[1]
		}
		out = append(out, e)
	}
	return out, nil
}

// SameHub reports whether two hub files hold the same tokens (whitespace
// aside; an empty file is an empty array).
func SameHub(a, b []byte) bool {
	compact := func(x []byte) []byte {
		x = bytes.TrimSpace(x)
		if len(x) == 0 {
			x = []byte("[]")
		}
		var out bytes.Buffer
		if json.Compact(&out, x) != nil {
			return x
		}
		return out.Bytes()
	}
	return bytes.Equal(compact(a), compact(b))
}
