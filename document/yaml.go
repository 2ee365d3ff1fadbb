package document

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits on YAML documents (and MaxDepth, as for JSON). The readers never expand aliases (they read the
// node tree and follow an alias only to read one scalar or one list), so an
// alias bomb cannot blow up memory here; the budget still rejects such
// documents outright so nothing downstream is tempted to expand them.
const (
	MaxYAMLAliases = 20 // alias nodes in one document; the classic billion laughs uses 90
	// MaxYAMLValues bounds the keys and items of an upload, counted by
	// yamlValues before yaml.v3 sees it: its tree costs some 600 ns and 200
	// bytes a value, so a body of nothing but `[0,0,...]` would cost ten
	// times a normal write. The largest documents clients send (a service
	// with every tag, a potctl microservice with its env and volumes) hold
	// a few hundred.
	MaxYAMLValues = 512
)

// topFields are the top-level keys of every kind of document.
var topFields = NewFieldSet("apiVersion", "kind", "metadata", "spec")

// ReadYAML reads a YAML upload whose kind is one of kinds with read, which
// gets the root mapping once it is known to be one document within the
// budgets, of that kind, with only the top-level keys apiVersion, kind,
// metadata and spec (apiVersion is not checked, as in the reference).
// What metadata and spec must hold is read's to check.
func ReadYAML[T any](body []byte, kinds []string, read func(root *yaml.Node) (T, error)) (v T, err error) {
	// yaml.v3 is a large parser fed untrusted input, and reading scalars
	// still calls into it: should it ever panic, the client gets a 400
	// rather than a crashed request.
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, Errorf("Error parsing YAML: %v", r)
		}
	}()
	root, err := parseYAML(body)
	if err != nil {
		return v, err
	}
	kind := YAMLValue(root, "kind")
	if isEmptyYAML(kind) {
		return v, Errorf("Invalid YAML format: missing kind field")
	}
	if kind.Kind != yaml.ScalarNode || kind.ShortTag() != "!!str" || !slices.Contains(kinds, kind.Value) {
		return v, Errorf("Invalid kind %s", describeYAML(kind))
	}
	if err := CheckYAMLFields(root, "", topFields); err != nil {
		return v, err
	}
	return read(root)
}

// parseYAML parses a YAML upload that must be one document whose root is a
// mapping, within the alias and depth budgets, without duplicated or merge
// keys. It answers "missing kind field" for anything else, as the
// reference does.
func parseYAML(body []byte) (*yaml.Node, error) {
	if yamlValues(body) > MaxYAMLValues {
		return nil, Errorf("Error parsing YAML: more than %d keys and items", MaxYAMLValues)
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty stream has no kind.
			return nil, Errorf("Invalid YAML format: missing kind field")
		}
		return nil, yamlParseError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlParseError(err)
	default:
		return nil, Errorf("Error parsing YAML: expected a single document in the stream, but found more")
	}
	aliases := 0
	if err := checkYAMLNode(&doc, 0, &aliases); err != nil {
		return nil, err
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = resolveAlias(doc.Content[0])
	}
	if root == nil || root.Kind != yaml.MappingNode {
		// A scalar or a list has no kind field, as in the reference.
		return nil, Errorf("Invalid YAML format: missing kind field")
	}
	return root, noMergeKeys(root)
}

// yamlValues is at least the number of nodes yaml.v3 makes of body, less
// one, read in one pass over its bytes: a `[` or `{` opens a collection
// and its first item, a `,` another item (two once a `{` came before it:
// a flow mapping's key without a `:` has a null value of its own), a `:`
// a key and its value, a `?` a key and its value (a flow collection's
// `?{` is one too), a `- ` an item and a `---` a document. It
// over-counts these characters in scalars and trailing comments, and skips
// only whole comment lines, which YAML never reads a node from (such a
// line inside a quoted or block scalar is text). Nothing is skipped that
// needs knowing where a quoted scalar ends, so no document can hide its
// values from the count; FuzzYAMLValues holds it to that.
func yamlValues(body []byte) int {
	n := 0
	lineStart := true
	afterBrace := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if lineStart {
			if c == ' ' || c == '\t' {
				continue
			}
			lineStart = false
			if c == '#' {
				for i < len(body) && body[i] != '\n' && body[i] != '\r' {
					i++
				}
				lineStart = true
				continue
			}
			if c == '-' && bytes.HasPrefix(body[i:], []byte("---")) {
				n++
			}
		}
		switch c {
		case '\n', '\r':
			lineStart = true
		case ',':
			n++
			if afterBrace {
				n++
			}
		case '{':
			afterBrace = true
			n += 2
		case '[', ':':
			n += 2
		case '?':
			n += 2
		case '-':
			if blankAfter(body, i) {
				n++
			}
		}
	}
	return n
}

// blankAfter says whether body[i] is followed by a blank or the end, as a
// YAML indicator must be.
func blankAfter(body []byte, i int) bool {
	return i+1 == len(body) || bytes.IndexByte([]byte(" \t\r\n"), body[i+1]) >= 0
}

func yamlParseError(err error) error {
	return Errorf("Error parsing YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// checkYAMLNode walks the tree without following aliases, enforcing the
// depth and alias limits and rejecting duplicated keys (js-yaml, which the
// reference uses, rejects them too; silently keeping one would be a guess).
// The document node is depth 0, so the root mapping is 1 as in JSON.
func checkYAMLNode(n *yaml.Node, depth int, aliases *int) error {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if p := nestingProblem(depth); p != "" {
			return Errorf("Error parsing YAML: %s", p)
		}
	}
	if n.Kind == yaml.AliasNode {
		*aliases++
		if *aliases > MaxYAMLAliases {
			return Errorf("Error parsing YAML: more than %d aliases", MaxYAMLAliases)
		}
		return nil
	}
	if n.Kind == yaml.MappingNode {
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := resolveAlias(n.Content[i])
			if key == nil || key.Kind != yaml.ScalarNode {
				continue
			}
			if seen[key.Value] {
				return Errorf("Error parsing YAML: line %d: duplicated mapping key '%s'", n.Content[i].Line, key.Value)
			}
			seen[key.Value] = true
		}
	}
	for _, c := range n.Content {
		if err := checkYAMLNode(c, depth+1, aliases); err != nil {
			return err
		}
	}
	return nil
}

// noMergeKeys rejects `<<` in the mappings we read: yaml.v3 nodes do not
// apply merges, so fields from a merge would silently go missing.
func noMergeKeys(m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if key := resolveAlias(m.Content[i]); key != nil && key.ShortTag() == "!!merge" {
			return Errorf("Error parsing YAML: line %d: merge keys ('<<') are not supported", key.Line)
		}
	}
	return nil
}

// resolveAlias follows an alias to the node it names. An anchored node is
// never itself an alias, so one step is enough; the loop bound is defensive.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// isEmptyYAML is the reference's `!doc.kind`: absent, null, "", false or 0.
func isEmptyYAML(n *yaml.Node) bool {
	if IsNullYAML(n) {
		return true
	}
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str":
		return n.Value == ""
	case "!!bool":
		var b bool
		return n.Decode(&b) == nil && !b
	case "!!int", "!!float":
		var f float64
		return n.Decode(&f) == nil && (f == 0 || math.IsNaN(f))
	}
	return false
}

func describeYAML(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "(a mapping)"
	case yaml.SequenceNode:
		return "(a sequence)"
	}
	return n.Value
}

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
			return Errorf("Error parsing YAML: line %d: a key that is not a scalar", m.Content[i].Line)
		}
		if !known[k.Value] && line == 0 {
			line = m.Content[i].Line
		}
		keys = append(keys, k.Value)
	}
	return known.Check(path, keys, fmt.Sprintf(" (line %d)", line))
}

// YAMLValue returns the value of key in mapping m (aliases resolved), or
// nil when absent. ReadYAML already rejected duplicated keys.
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
		return nil, NotOfType(field, "string")
	}
	s := n.Value
	if err := CheckText(field, s); err != nil {
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
		return nil, NotOfType(field, "array")
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		s, err := YAMLString(resolveAlias(c), fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	if err := CheckTextList(field, out); err != nil {
		return nil, err
	}
	return &out, nil
}

// YAMLInt returns a YAML integer, nil when n is absent; a quoted "8080" is
// a string and so a type error, while 8080.0 is an integer as JSON Schema
// sees it.
func YAMLInt(n *yaml.Node, field string) (*int, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind == yaml.ScalarNode {
		var f float64
		switch n.ShortTag() {
		case "!!int":
			var i int64
			if n.Decode(&i) == nil {
				v := clampInt64(i)
				return &v, nil
			}
			// An integer beyond int64: keep it an integer (a range
			// check rejects it) rather than call it a type error.
			if n.Decode(&f) == nil {
				if v, ok := clampInt(f); ok {
					return &v, nil
				}
			}
		case "!!float":
			if n.Decode(&f) == nil {
				if v, ok := clampInt(f); ok {
					return &v, nil
				}
			}
		}
	}
	return nil, NotOfType(field, "integer")
}

// YAMLBool returns a YAML boolean (true or false, unquoted), nil when n is
// absent.
func YAMLBool(n *yaml.Node, field string) (*bool, error) {
	if n == nil {
		return nil, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		return nil, NotOfType(field, "boolean")
	}
	return &b, nil
}
