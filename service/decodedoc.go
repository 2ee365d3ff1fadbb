package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"svcbridge/inventory"
)

// The readers every request document goes through (Services here, agents
// and microservices in the api package): one JSON object or one YAML
// document, checked for what no field may carry, before any field is read.

// FieldSet is the keys a document of one kind may carry. Unknown keys are
// refused, naming them, as Kubernetes' strict field validation does: a
// misspelt field silently dropped is a change the client believes made.
type FieldSet map[string]bool

// NewFieldSet returns the set of names.
func NewFieldSet(names ...string) FieldSet {
	f := make(FieldSet, len(names))
	for _, n := range names {
		f[n] = true
	}
	return f
}

// Check refuses the keys not in f, naming them all (in the order given)
// prefixed with path; where, when set, says where the first one is.
func (f FieldSet) Check(path string, keys []string, where string) error {
	var unknown []string
	for _, k := range keys {
		if !f[k] {
			unknown = append(unknown, "'"+joinPath(path, k)+"'")
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return invalidf("Unknown field %s%s", unknown[0], where)
	}
	return invalidf("Unknown fields %s%s", strings.Join(unknown, ", "), where)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// textError is inventory.CheckText as a client error.
func textError(field, s string) error {
	if err := inventory.CheckText(field, s); err != nil {
		return invalidf("%s", err.Error())
	}
	return nil
}

// textListError is inventory.CheckTextList as a client error.
func textListError(field string, items []string) error {
	if err := inventory.CheckTextList(field, items); err != nil {
		return invalidf("%s", err.Error())
	}
	return nil
}

// ---- JSON ----

// ReadJSONObject reads a body that must be exactly one JSON object, with
// no key given twice at any depth (YAML refuses that too; keeping one of
// them would be a guess) and only valid UTF-8 in its strings (encoding/json
// would silently turn bad bytes into U+FFFD). Values stay raw so that each
// field is type-checked with its own message.
func ReadJSONObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, invalidf("Invalid JSON: empty body")
		}
		return nil, invalidf("Invalid JSON: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidf("Invalid JSON: unexpected data after the top-level value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, notOfType("instance", "object")
	}
	// The body is known to be valid JSON: walk its tokens for what Decode
	// does not see.
	walk := json.NewDecoder(bytes.NewReader(body))
	walk.UseNumber()
	if err := checkJSONValue(walk, body, ""); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, invalidf("Invalid JSON: %s", err.Error())
	}
	return obj, nil
}

// checkJSONValue walks one value of a valid JSON text, refusing repeated
// keys and strings (keys included) whose raw bytes are not UTF-8.
func checkJSONValue(dec *json.Decoder, body []byte, path string) error {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return invalidf("Invalid JSON: %s", err.Error())
	}
	switch t := tok.(type) {
	case string:
		// The raw token (with quotes, escapes and separators, all ASCII)
		// is valid UTF-8 exactly when the string's bytes are.
		return textError(path, invalidOnly(body[start:dec.InputOffset()]))
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				start := dec.InputOffset()
				k, err := dec.Token()
				if err != nil {
					return invalidf("Invalid JSON: %s", err.Error())
				}
				key, _ := k.(string)
				if err := textError(joinPath(path, key), invalidOnly(body[start:dec.InputOffset()])); err != nil {
					return err
				}
				if seen[key] {
					return invalidf("Invalid JSON: duplicated key '%s'", joinPath(path, key))
				}
				seen[key] = true
				if err := checkJSONValue(dec, body, joinPath(path, key)); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := checkJSONValue(dec, body, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		if err != nil {
			return invalidf("Invalid JSON: %s", err.Error())
		}
	}
	return nil
}

// invalidOnly returns raw as a string when it is not valid UTF-8 (so that
// the text rule names that problem), else "": raw JSON separators between
// tokens are not the field's content and must not meet the control
// character rule.
func invalidOnly(raw []byte) string {
	if inventory.TextProblem(string(raw)) == "is not valid UTF-8" {
		return string(raw)
	}
	return ""
}

// ---- YAML ----

// ParseYAML parses a YAML upload that must be one document whose root is
// a mapping, within the alias and depth budgets, without duplicated or
// merge keys. It answers "missing kind field" for anything else, as the
// reference does; the caller checks kind.
func ParseYAML(body []byte) (root *yaml.Node, err error) {
	// yaml.v3 is a large parser fed untrusted input: should it ever panic,
	// the client gets a 400 rather than a crashed request.
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, invalidf("Error parsing YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty stream has no kind.
			return nil, invalidf("Invalid YAML format: missing kind field")
		}
		return nil, yamlParseError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlParseError(err)
	default:
		return nil, invalidf("Error parsing YAML: expected a single document in the stream, but found more")
	}
	aliases := 0
	if err := checkYAMLNode(&doc, 0, &aliases); err != nil {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = resolveAlias(doc.Content[0])
	}
	if root == nil || root.Kind != yaml.MappingNode {
		// A scalar or a list has no kind field, as in the reference.
		return nil, invalidf("Invalid YAML format: missing kind field")
	}
	return root, noMergeKeys(root)
}

// YAMLTopFields are the top-level keys of every kind of document.
var YAMLTopFields = NewFieldSet("apiVersion", "kind", "metadata", "spec")

// CheckYAMLFields refuses merge keys and keys outside known in mapping m,
// which is at path (e.g. "spec").
func CheckYAMLFields(m *yaml.Node, path string, known FieldSet) error {
	if err := noMergeKeys(m); err != nil {
		return err
	}
	var keys []string
	line := 0
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := resolveAlias(m.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			return invalidf("Error parsing YAML: line %d: a key that is not a scalar", m.Content[i].Line)
		}
		if !known[k.Value] && line == 0 {
			line = m.Content[i].Line
		}
		keys = append(keys, k.Value)
	}
	return known.Check(path, keys, fmt.Sprintf(" (line %d)", line))
}

// YAMLValue returns the value of key in mapping m (aliases resolved), or
// nil when absent. ParseYAML already rejected duplicated keys.
func YAMLValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolveAlias(m.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return resolveAlias(m.Content[i+1])
		}
	}
	return nil
}

// IsNullYAML is JavaScript's `x == null`: absent or a YAML null.
func IsNullYAML(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// YAMLString returns a YAML string scalar, nil when n is absent. Only the
// !!str tag counts: an unquoted 123 or true is a number or a boolean, as
// js-yaml reads it.
func YAMLString(n *yaml.Node, field string) (*string, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return nil, notOfType(field, "string")
	}
	s := n.Value
	if err := textError(field, s); err != nil {
		return nil, err
	}
	return &s, nil
}

// YAMLStringList reads a list of strings, each given once. Absent is an
// empty list because a YAML upload is the whole desired document; an
// explicit null is a type error, as in the reference.
func YAMLStringList(n *yaml.Node, field string) (*[]string, error) {
	if n == nil {
		return &[]string{}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, notOfType(field, "array")
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		s, err := YAMLString(resolveAlias(c), fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	if err := textListError(field, out); err != nil {
		return nil, err
	}
	return &out, nil
}
