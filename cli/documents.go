package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"svcbridge/wire"
)

// The documents `get -o json|yaml` prints are the documents apply reads
// (kind, metadata, spec), so that its output applies unchanged, as
// kubectl's does. What the server sets goes under status, which apply
// drops before sending, as the server answers it. The spec names agents
// and microservices as people write them, by the names the server sends
// beside the uuids it stores (byName), so that an export reads like the
// file it came from.

// apiVersion heads every document, as the examples write it.
const apiVersion = "iofog.org/v3"

// field is one key of a JSON object, its value as it was.
type field struct {
	key   string
	value json.RawMessage
}

// object is a JSON object that keeps its key order (YAML prints it so).
type object []field

func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(f.value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// objectFields reads a JSON object's keys in order.
func objectFields(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %.60s", raw)
	}
	var out object
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{key: t.(string), value: v})
	}
	return out, nil
}

func (o object) get(key string) json.RawMessage {
	for _, f := range o {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

func rawString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// toDocument arranges an API object as a document of kind: the keys in
// metadataKeys under metadata, those in specKeys under spec, the rest
// (what the server sets) under status, each in the API's order.
func toDocument(kind string, fields object, metadataKeys, specKeys []string) ([]byte, error) {
	var metadata, spec, status object
	for _, f := range fields {
		switch {
		case slices.Contains(metadataKeys, f.key):
			metadata = append(metadata, f)
		case slices.Contains(specKeys, f.key):
			spec = append(spec, f)
		default:
			status = append(status, f)
		}
	}
	doc := object{{"apiVersion", rawString(apiVersion)}, {"kind", rawString(kind)}}
	for _, part := range []struct {
		key    string
		fields object
	}{{"metadata", metadata}, {"spec", spec}, {"status", status}} {
		if part.fields == nil {
			part.fields = object{}
		}
		b, err := part.fields.MarshalJSON()
		if err != nil {
			return nil, err
		}
		doc = append(doc, field{part.key, b})
	}
	return doc.MarshalJSON()
}

// byName shows each reference of fields by the name the server sends
// beside it (refs: the reference's key, then its name's), and drops the
// name's key. An object without the name's key (a service being deleted,
// whose spec is gone) has no reference either.
func byName(fields object, refs ...[2]string) object {
	for _, r := range refs {
		name := fields.get(r[1])
		fields = slices.DeleteFunc(fields, func(f field) bool { return f.key == r[1] })
		if name == nil {
			continue
		}
		for i, f := range fields {
			if f.key == r[0] {
				fields[i].value = name
			}
		}
	}
	return fields
}

// Keys of each kind's spec, as apply reads them.
var (
	serviceSpecKeys      = []string{"type", "resource", "targetPort", "defaultBridge", "servicePort", "k8sType", "kubernetes"}
	agentSpecKeys        = []string{"host", "routerMode", "upstreamRouters", "defaultRouter"}
	microserviceSpecKeys = []string{"agent", "hostNetworkMode"}
)

func serviceDocument(raw []byte) ([]byte, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	fields = byName(fields, [2]string{"resource", "resourceName"}, [2]string{"defaultBridge", "defaultBridgeName"})
	return toDocument("Service", fields, []string{"name", "tags"}, serviceSpecKeys)
}

func agentDocument(raw []byte) ([]byte, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	fields = byName(fields, [2]string{"upstreamRouters", "upstreamRouterNames"})
	return toDocument("Agent", fields, []string{"name", "tags"}, agentSpecKeys)
}

// microserviceDocument names the microservice application/name, as apply
// and every verb name it.
// iofogMicroserviceKeys are the reference controller's fields of a
// microservice answer (wire.IofogMicroservice), there for ioFog clients:
// beyond the agent svcbridge holds none of them, so its documents leave
// them out.
var iofogMicroserviceKeys = func() map[string]bool {
	b, _ := json.Marshal(wire.IofogMicroservice{})
	fields, _ := objectFields(b)
	keys := map[string]bool{}
	for _, f := range fields {
		keys[f.key] = true
	}
	return keys
}()

func microserviceDocument(raw []byte) ([]byte, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	var app, name string
	json.Unmarshal(fields.get("application"), &app)
	json.Unmarshal(fields.get("name"), &name)
	fields = byName(fields, [2]string{"agent", "agentName"})
	kept := slices.DeleteFunc(fields, func(f field) bool { return f.key == "application" || iofogMicroserviceKeys[f.key] })
	for i, f := range kept {
		if f.key == "name" {
			kept[i].value = rawString(app + "/" + name)
		}
	}
	return toDocument("Microservice", kept, []string{"name"}, microserviceSpecKeys)
}

// printDocuments prints the API objects raws as -o json|yaml do, each
// converted by toDoc: the one document when one name was asked for, else
// a kind: List of them.
func printDocuments(w io.Writer, format string, names []string, raws []json.RawMessage, toDoc func([]byte) ([]byte, error)) error {
	docs, err := documents(raws, toDoc)
	if err != nil {
		return err
	}
	return printDocs(w, format, len(names) == 1, docs)
}

// documents converts the API objects raws by toDoc.
func documents(raws []json.RawMessage, toDoc func([]byte) ([]byte, error)) ([][]byte, error) {
	docs := make([][]byte, len(raws))
	for i, r := range raws {
		d, err := toDoc(r)
		if err != nil {
			return nil, err
		}
		docs[i] = d
	}
	return docs, nil
}

// printDocs prints docs in format json or yaml: the one document when
// one was asked for by name (single), else a kind: List of them.
func printDocs(w io.Writer, format string, single bool, docs [][]byte) error {
	if single && len(docs) == 1 {
		return printRaw(w, format, docs[0])
	}
	list := object{{"apiVersion", rawString(apiVersion)}, {"kind", rawString("List")},
		{"items", jsonArray(docs, func(d []byte) json.RawMessage { return d })}}
	b, err := list.MarshalJSON()
	if err != nil {
		return err
	}
	return printRaw(w, format, b)
}
