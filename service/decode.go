package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Patch is a partial Spec: a nil field was absent in the input.
type Patch struct {
	Name          *string
	Tags          *[]string
	Type          *string
	Resource      *string
	TargetPort    *int
	DefaultBridge *string
	ServicePort   *int
	K8sType       *string
	Kubernetes    *KubernetesPatch
}

// Apply returns to with every field present in p replaced: a JSON PATCH is a
// partial update, so absent fields keep their stored values. Slices and
// pointers are copied so the result never aliases p or to.
func (p Patch) Apply(to Spec) Spec {
	out := to
	out.Tags = append([]string(nil), to.Tags...)
	if to.ServicePort != nil {
		out.ServicePort = ptr(*to.ServicePort)
	}
	if to.K8sType != nil {
		out.K8sType = ptr(*to.K8sType)
	}
	if p.Name != nil {
		out.Name = *p.Name
	}
	if p.Tags != nil {
		out.Tags = append([]string{}, (*p.Tags)...)
	}
	if p.Type != nil {
		out.Type = *p.Type
	}
	if p.Resource != nil {
		out.Resource = *p.Resource
	}
	if p.TargetPort != nil {
		out.TargetPort = *p.TargetPort
	}
	if p.DefaultBridge != nil {
		out.DefaultBridge = *p.DefaultBridge
	}
	if p.ServicePort != nil {
		out.ServicePort = ptr(*p.ServicePort)
	}
	if p.K8sType != nil {
		out.K8sType = ptr(*p.K8sType)
	}
	var kp KubernetesPatch // none: a copy of to's block
	if p.Kubernetes != nil {
		kp = *p.Kubernetes
	}
	out.Kubernetes = kp.apply(to.Kubernetes)
	return out
}

// RequireCreate reports the first field a create needs but p lacks, in the
// order of the reference schema's required list.
func (p Patch) RequireCreate() error {
	switch {
	case p.Name == nil:
		return missing("name")
	case p.Type == nil:
		return missing("type")
	case p.Resource == nil:
		return missing("resource")
	case p.TargetPort == nil:
		return missing("targetPort")
	}
	return nil
}

func missing(field string) error {
	return invalidf("Required field '%s' is missing", field)
}

func notOfType(field, typ string) error {
	return invalidf("Field '%s' is not of a type(s) %s", field, typ)
}

func ptr[T any](v T) *T { return &v }

// ---- JSON ----

// Fields of a Service document. Adding an alias is one more name here and
// its read in the decoder.
var (
	specFields = []string{"type", "resource", "targetPort", "defaultBridge", "servicePort", "k8sType", kubernetesField}
	// returnedFields are what GET /services/{name} answers beyond the
	// spec (api adds workflowId and distribution): accepted and ignored,
	// so a GET answer can be sent back.
	returnedFields = []string{"bridgePort", "serviceEndpoint", "provisioningStatus", "provisioningError", "provisioningMessage",
		"generation", "observedGeneration", "createdAt", "updatedAt", "workflowId", "workflowNamespace", "workflowUrl", "distribution"}
	// defaultBridgePort is the ioFog Go SDK's name of defaultBridge in its
	// update request.
	jsonFields         = NewFieldSet(slices.Concat([]string{"name", "tags", "defaultBridgePort"}, specFields, returnedFields)...)
	yamlMetadataFields = NewFieldSet("name", "tags")
	yamlSpecFields     = NewFieldSet(slices.Concat(specFields, returnedFields)...)
)

// DecodeJSON decodes a JSON request body (see ReadJSONObject). Keys that
// are neither spec fields nor fields the API returns are refused. Type
// errors are reported for the first offending field in the reference order.
func DecodeJSON(body []byte) (Patch, error) {
	obj, err := ReadJSONObject(body)
	if err != nil {
		return Patch{}, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a stable message
	if err := jsonFields.Check("", keys, ""); err != nil {
		return Patch{}, err
	}

	var p Patch
	if p.Name, err = jsonString(obj, "name"); err != nil {
		return Patch{}, err
	}
	if p.Type, err = jsonString(obj, "type"); err != nil {
		return Patch{}, err
	}
	if p.Resource, err = jsonString(obj, "resource"); err != nil {
		return Patch{}, err
	}
	if p.TargetPort, err = jsonInt(obj, "targetPort"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge, err = jsonString(obj, "defaultBridge"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge == nil {
		// The ioFog Go SDK's update names the field defaultBridgePort (its
		// create says defaultBridge): the same field, so the same rules.
		if p.DefaultBridge, err = jsonString(obj, "defaultBridgePort"); err != nil {
			return Patch{}, err
		}
	}
	if p.ServicePort, err = jsonInt(obj, "servicePort"); err != nil {
		return Patch{}, err
	}
	if p.K8sType, err = jsonString(obj, "k8sType"); err != nil {
		return Patch{}, err
	}
	if raw, ok := obj[kubernetesField]; ok {
		if p.Kubernetes, err = decodeKubernetesValue(raw); err != nil {
			return Patch{}, err
		}
	}
	if raw, ok := obj["tags"]; ok {
		var v any
		_ = jsonValue(raw, &v)
		list, isList := v.([]any)
		if !isList {
			return Patch{}, notOfType("tags", "array")
		}
		tags := make([]string, 0, len(list))
		for i, t := range list {
			s, isString := t.(string)
			if !isString {
				return Patch{}, notOfType(fmt.Sprintf("tags[%d]", i), "string")
			}
			tags = append(tags, s)
		}
		if err := textListError("tags", tags); err != nil {
			return Patch{}, err
		}
		p.Tags = &tags
	}
	return p, nil
}

// jsonValue decodes a raw value keeping numbers as text, so a 400-digit
// port is a range error later instead of a float conversion surprise here.
func jsonValue(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// jsonString returns the string at key; absent is nil, and null or any other
// JSON type is a type error (the reference schema treats null that way).
func jsonString(obj map[string]json.RawMessage, key string) (*string, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	var v any
	_ = jsonValue(raw, &v) // ReadJSONObject checked the syntax
	s, ok := v.(string)
	if !ok {
		return nil, notOfType(key, "string")
	}
	if err := textError(key, s); err != nil {
		return nil, err
	}
	return &s, nil
}

func jsonInt(obj map[string]json.RawMessage, key string) (*int, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	var v any
	_ = jsonValue(raw, &v) // ReadJSONObject checked the syntax
	n, ok := v.(json.Number)
	if !ok {
		return nil, notOfType(key, "integer")
	}
	i, ok := integerValue(n.String())
	if !ok {
		return nil, notOfType(key, "integer")
	}
	return &i, nil
}

// integerValue parses a JSON number the way JSON Schema types it: any
// number with an integral value (8080, 8080.0, 8.08e3) is an integer.
// Integers beyond int are clamped; the port range check rejects them with a
// clearer message than a type error would give.
func integerValue(s string) (int, bool) {
	if i, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
		return int(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Overflows to ±Inf: not an integer in JavaScript either
		// (Number.isInteger(Infinity) is false). Underflow gives 0, no error.
		return 0, false
	}
	return clampInt(f)
}

// clampInt64 narrows i to int (a no-op on 64-bit platforms).
func clampInt64(i int64) int {
	switch {
	case i > math.MaxInt:
		return math.MaxInt
	case i < math.MinInt:
		return math.MinInt
	}
	return int(i)
}

// clampInt converts an integral float to int, clamping out-of-range values;
// ok is false for fractions, NaN and infinities.
func clampInt(f float64) (int, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false
	}
	switch {
	case f >= float64(math.MaxInt):
		return math.MaxInt, true
	case f <= float64(math.MinInt):
		return math.MinInt, true
	}
	return int(f), true
}

// ---- YAML ----

// Limits on YAML documents. The decoder never expands aliases (it reads the
// node tree and follows an alias only to read one scalar or the tags list),
// so an alias bomb cannot blow up memory here; the budget still rejects such
// documents outright so nothing downstream is tempted to expand them.
const (
	MaxYAMLDepth   = 32 // nesting of mappings and sequences; a Service needs 4
	MaxYAMLAliases = 20 // alias nodes in one document; the classic billion laughs uses 90
)

// DecodeYAML decodes a `kind: Service` document (the multipart field
// `service` of the YAML endpoints). The YAML is the whole desired document,
// so an absent metadata.tags means no tags (Tags is a non-nil empty slice).
// apiVersion is not checked, as in the reference.
func DecodeYAML(body []byte) (p Patch, err error) {
	// Reading scalars still calls into yaml.v3: a panic there is a 400 too.
	defer func() {
		if r := recover(); r != nil {
			p, err = Patch{}, invalidf("Error parsing YAML: %v", r)
		}
	}()
	root, err := ParseYAML(body)
	if err != nil {
		return Patch{}, err
	}
	kind := YAMLValue(root, "kind")
	if isEmptyYAML(kind) {
		return Patch{}, invalidf("Invalid YAML format: missing kind field")
	}
	if kind.Kind != yaml.ScalarNode || kind.ShortTag() != "!!str" || kind.Value != "Service" {
		return Patch{}, invalidf("Invalid kind %s", describeYAML(kind))
	}
	if err := CheckYAMLFields(root, "", YAMLTopFields); err != nil {
		return Patch{}, err
	}

	metadata, spec := YAMLValue(root, "metadata"), YAMLValue(root, "spec")
	if IsNullYAML(metadata) || IsNullYAML(spec) {
		return Patch{}, invalidf("Invalid YAML format: missing metadata or spec")
	}
	if metadata.Kind != yaml.MappingNode || spec.Kind != yaml.MappingNode {
		return Patch{}, invalidf("Invalid YAML format: metadata and spec must be mappings")
	}
	if err := CheckYAMLFields(metadata, "metadata", yamlMetadataFields); err != nil {
		return Patch{}, err
	}
	if err := CheckYAMLFields(spec, "spec", yamlSpecFields); err != nil {
		return Patch{}, err
	}

	if p.Name, err = YAMLString(YAMLValue(metadata, "name"), "name"); err != nil {
		return Patch{}, err
	}
	if p.Type, err = YAMLString(YAMLValue(spec, "type"), "type"); err != nil {
		return Patch{}, err
	}
	if p.Resource, err = YAMLString(YAMLValue(spec, "resource"), "resource"); err != nil {
		return Patch{}, err
	}
	if p.TargetPort, err = yamlInt(YAMLValue(spec, "targetPort"), "targetPort"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge, err = YAMLString(YAMLValue(spec, "defaultBridge"), "defaultBridge"); err != nil {
		return Patch{}, err
	}
	if p.ServicePort, err = yamlInt(YAMLValue(spec, "servicePort"), "servicePort"); err != nil {
		return Patch{}, err
	}
	if p.K8sType, err = YAMLString(YAMLValue(spec, "k8sType"), "k8sType"); err != nil {
		return Patch{}, err
	}
	if p.Tags, err = YAMLStringList(YAMLValue(metadata, "tags"), "tags"); err != nil {
		return Patch{}, err
	}
	if p.Kubernetes, err = yamlKubernetes(YAMLValue(spec, kubernetesField)); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// CheckYAMLName checks, on a YAML update, that metadata.name is the name in
// the endpoint path.
func CheckYAMLName(p Patch, pathName string) error {
	name := "undefined" // what the reference prints for a missing name
	if p.Name != nil {
		name = *p.Name
		if name == pathName {
			return nil
		}
	}
	return invalidf("Service name in YAML (%s) doesn't match endpoint path (%s)", name, pathName)
}

func yamlParseError(err error) error {
	return invalidf("Error parsing YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// checkYAMLNode walks the tree without following aliases, enforcing the
// depth and alias limits and rejecting duplicated keys (js-yaml, which the
// reference uses, rejects them too; silently keeping one would be a guess).
func checkYAMLNode(n *yaml.Node, depth int, aliases *int) error {
	if depth > MaxYAMLDepth {
		return invalidf("Error parsing YAML: nesting deeper than %d levels", MaxYAMLDepth)
	}
	if n.Kind == yaml.AliasNode {
		*aliases++
		if *aliases > MaxYAMLAliases {
			return invalidf("Error parsing YAML: more than %d aliases", MaxYAMLAliases)
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
				return invalidf("Error parsing YAML: line %d: duplicated mapping key '%s'", n.Content[i].Line, key.Value)
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
			return invalidf("Error parsing YAML: line %d: merge keys ('<<') are not supported", key.Line)
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

// yamlInt returns a YAML integer; a quoted "8080" is a string and so a type
// error, while 8080.0 is an integer as JSON Schema sees it.
func yamlInt(n *yaml.Node, field string) (*int, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			var i int64
			if n.Decode(&i) == nil {
				return ptr(clampInt64(i)), nil
			}
			// An integer beyond int64: keep it an integer (the port
			// range check rejects it) rather than call it a type error.
			var f float64
			if n.Decode(&f) == nil {
				if v, ok := clampInt(f); ok {
					return &v, nil
				}
			}
		case "!!float":
			var f float64
			if n.Decode(&f) == nil {
				if v, ok := clampInt(f); ok {
					return &v, nil
				}
			}
		}
	}
	return nil, notOfType(field, "integer")
}
