package service

import (
	"slices"

	"gopkg.in/yaml.v3"

	"svcbridge/document"
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
		return document.Missing("name")
	case p.Type == nil:
		return document.Missing("type")
	case p.Resource == nil:
		return document.Missing("resource")
	case p.TargetPort == nil:
		return document.Missing("targetPort")
	}
	return nil
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
		"generation", "observedGeneration", "reconcileRequest", "observedReconcileRequest", "createdAt", "updatedAt", "workflowId", "workflowNamespace", "workflowUrl", "distribution", "placement",
		"resourceName", "defaultBridgeName"}
	// defaultBridgePort is the ioFog Go SDK's name of defaultBridge in its
	// update request.
	jsonFields         = document.NewFieldSet(slices.Concat([]string{"name", "tags", "defaultBridgePort"}, specFields, returnedFields)...)
	yamlMetadataFields = document.NewFieldSet("name", "tags")
	yamlSpecFields     = document.NewFieldSet(slices.Concat(specFields, returnedFields)...)
)

// DecodeJSON decodes a JSON request body (see document.ReadJSONFields).
// Keys that are neither spec fields nor fields the API returns are
// refused. Type errors are reported for the first offending field in the
// reference order.
func DecodeJSON(body []byte) (Patch, error) {
	obj, err := document.ReadJSONFields(body, jsonFields)
	if err != nil {
		return Patch{}, err
	}
	var p Patch
	if p.Name, err = document.JSONField[string](obj, "name", "string"); err != nil {
		return Patch{}, err
	}
	if p.Type, err = document.JSONField[string](obj, "type", "string"); err != nil {
		return Patch{}, err
	}
	if p.Resource, err = document.JSONField[string](obj, "resource", "string"); err != nil {
		return Patch{}, err
	}
	if p.TargetPort, err = document.JSONInt(obj, "targetPort"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge, err = document.JSONField[string](obj, "defaultBridge", "string"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge == nil {
		// The ioFog Go SDK's update names the field defaultBridgePort (its
		// create says defaultBridge): the same field, so the same rules.
		if p.DefaultBridge, err = document.JSONField[string](obj, "defaultBridgePort", "string"); err != nil {
			return Patch{}, err
		}
	}
	if p.ServicePort, err = document.JSONInt(obj, "servicePort"); err != nil {
		return Patch{}, err
	}
	if p.K8sType, err = document.JSONField[string](obj, "k8sType", "string"); err != nil {
		return Patch{}, err
	}
	if raw, ok := obj[kubernetesField]; ok {
		if p.Kubernetes, err = decodeKubernetesValue(raw); err != nil {
			return Patch{}, err
		}
	}
	if p.Tags, err = document.JSONStringList(obj, "tags"); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// ---- YAML ----

// Limits on a Service's YAML document: the reader's, for every kind.
const (
	MaxDepth       = document.MaxDepth
	MaxYAMLAliases = document.MaxYAMLAliases
)

// serviceKinds are the kinds of a Service YAML document.
var serviceKinds = []string{"Service"}

// DecodeYAML decodes a `kind: Service` document (the multipart field
// `service` of the YAML endpoints). The YAML is the whole desired document,
// so an absent metadata.tags means no tags (Tags is a non-nil empty slice).
func DecodeYAML(body []byte) (Patch, error) {
	return document.ReadYAML(body, serviceKinds, decodeServiceYAML)
}

func decodeServiceYAML(root *yaml.Node) (p Patch, err error) {
	metadata, spec := document.YAMLValue(root, "metadata"), document.YAMLValue(root, "spec")
	if document.IsNullYAML(metadata) || document.IsNullYAML(spec) {
		return Patch{}, invalidf("Invalid YAML format: missing metadata or spec")
	}
	if metadata.Kind != yaml.MappingNode || spec.Kind != yaml.MappingNode {
		return Patch{}, invalidf("Invalid YAML format: metadata and spec must be mappings")
	}
	if err := document.CheckYAMLFields(metadata, "metadata", yamlMetadataFields); err != nil {
		return Patch{}, err
	}
	if err := document.CheckYAMLFields(spec, "spec", yamlSpecFields); err != nil {
		return Patch{}, err
	}

	if p.Name, err = document.YAMLString(document.YAMLValue(metadata, "name"), "name"); err != nil {
		return Patch{}, err
	}
	if p.Type, err = document.YAMLString(document.YAMLValue(spec, "type"), "type"); err != nil {
		return Patch{}, err
	}
	if p.Resource, err = document.YAMLString(document.YAMLValue(spec, "resource"), "resource"); err != nil {
		return Patch{}, err
	}
	if p.TargetPort, err = document.YAMLInt(document.YAMLValue(spec, "targetPort"), "targetPort"); err != nil {
		return Patch{}, err
	}
	if p.DefaultBridge, err = document.YAMLString(document.YAMLValue(spec, "defaultBridge"), "defaultBridge"); err != nil {
		return Patch{}, err
	}
	if p.ServicePort, err = document.YAMLInt(document.YAMLValue(spec, "servicePort"), "servicePort"); err != nil {
		return Patch{}, err
	}
	if p.K8sType, err = document.YAMLString(document.YAMLValue(spec, "k8sType"), "k8sType"); err != nil {
		return Patch{}, err
	}
	if p.Tags, err = document.YAMLStringList(document.YAMLValue(metadata, "tags"), "tags"); err != nil {
		return Patch{}, err
	}
	if p.Kubernetes, err = yamlKubernetes(document.YAMLValue(spec, kubernetesField)); err != nil {
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
