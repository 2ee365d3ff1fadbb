package inventory

import (
	"strings"

	"gopkg.in/yaml.v3"

	"svcbridge/document"
)

// The reference controller's documents for agents and microservices, as
// potctl and the ioFog Go SDK send them (Datasance Controller v3.7.3's
// schemas and YAML parser), read into svcbridge's inputs: the fields
// svcbridge holds under the reference's names, the others accepted (type-
// checked as the reference's schema types them) and ignored.

// iofogAgentIgnored are the keys of the reference's agent update
// (iofogUpdate, what the SDK's AgentUpdateRequest carries) that svcbridge
// holds nothing for, with the JSON type the reference requires of each.
var iofogAgentIgnored = []struct{ key, typ string }{
	{"location", "string"}, {"latitude", "number"}, {"longitude", "number"}, {"description", "string"},
	{"fogType", "integer"}, {"networkInterface", "string"}, {"dockerUrl", "string"}, {"containerEngine", "string"},
	{"deploymentType", "string"}, {"diskLimit", "integer"}, {"diskDirectory", "string"}, {"memoryLimit", "integer"},
	{"cpuLimit", "integer"}, {"logLimit", "integer"}, {"logDirectory", "string"}, {"logFileCount", "integer"},
	{"statusFrequency", "integer"}, {"changeFrequency", "integer"}, {"deviceScanFrequency", "integer"},
	{"bluetoothEnabled", "boolean"}, {"watchdogEnabled", "boolean"}, {"abstractedHardwareEnabled", "boolean"},
	{"gpsMode", "string"}, {"gpsScanFrequency", "number"}, {"gpsDevice", "string"}, {"edgeGuardFrequency", "number"},
	{"dockerPruningFrequency", "integer"}, {"availableDiskThreshold", "integer"}, {"logLevel", "string"},
	{"messagingPort", "integer"}, {"interRouterPort", "integer"}, {"edgeRouterPort", "integer"},
	{"networkRouter", "string"}, {"timeZone", "string"},
}

// iofogAgentFields are the keys of the reference's agent update: the
// agent's fields (the default router as isSystem, as GET /iofog answers
// it) and the ignored ones. Other keys are refused, as the native
// document's are.
var iofogAgentFields = func() document.FieldSet {
	keys := []string{"uuid", "name", "host", "routerMode", "tags", "upstreamRouters", "isSystem"}
	for _, f := range iofogAgentIgnored {
		keys = append(keys, f.key)
	}
	return document.NewFieldSet(keys...)
}()

// DecodeIofogAgentJSON reads the reference controller's agent update
// (PATCH /api/v3/iofog/{uuid}: potctl's deploy of an AgentConfig). Its
// upstreamRouters are agent uuids, or default-router for the default
// router, which the caller resolves.
func DecodeIofogAgentJSON(body []byte) (AgentInput, error) {
	obj, err := document.ReadJSONFields(body, iofogAgentFields)
	if err != nil {
		return AgentInput{}, err
	}
	in, err := readAgentJSON(obj, "isSystem")
	if err != nil {
		return AgentInput{}, err
	}
	for _, f := range iofogAgentIgnored {
		switch f.typ {
		case "integer":
			_, err = document.JSONInt(obj, f.key)
		case "number":
			_, err = document.JSONField[float64](obj, f.key, f.typ)
		case "boolean":
			_, err = document.JSONField[bool](obj, f.key, f.typ)
		default:
			_, err = document.JSONField[string](obj, f.key, f.typ)
		}
		if err != nil {
			return AgentInput{}, err
		}
	}
	return in, nil
}

// Keys of a kind: Microservice document (what potctl deploys and moves:
// the SDK's apps.Microservice under an IofogHeader) below the top level:
// the reference reads metadata.name, spec.name, spec.application,
// spec.agent.name and spec.container.hostNetworkMode into what svcbridge
// holds; the others configure the container, which svcbridge does not run.
var (
	microserviceMetadataFields = document.NewFieldSet("name", "namespace")
	microserviceSpecFields     = document.NewFieldSet("uuid", "name", "agent", "images", "container", "msRoutes", "schedule",
		"config", "flow", "application", "created", "rebuild", "status", "execStatus", "serviceAccount", "natsEnabled", "natsConfig")
	microserviceAgentFields     = document.NewFieldSet("name", "config")
	microserviceContainerFields = document.NewFieldSet("commands", "volumes", "env", "extraHosts", "ports", "rootHostAccess",
		"pidMode", "ipcMode", "runtime", "platform", "runAsUser", "cdiDevices", "capAdd", "capDrop", "annotations",
		"hostNetworkMode", "isPrivileged", "cpuSetCpus", "memoryLimit", "healthCheck")
)

// DecodeMicroserviceYAML reads one kind: Microservice document, the
// reference's way: the name is spec.name, else metadata.name, and may be
// <application>/<name> (which overrides spec.application). An absent
// spec.agent.name or spec.container.hostNetworkMode is nil: a create
// requires the agent and makes hostNetworkMode false; an update keeps
// both, as potctl's move sends a document without hostNetworkMode (the
// SDK's microservice has none) that must not change it.
func DecodeMicroserviceYAML(body []byte) (MicroserviceInput, error) {
	return document.ReadYAML(body, []string{"Microservice"}, readMicroserviceYAML)
}

func readMicroserviceYAML(root *yaml.Node) (in MicroserviceInput, err error) {
	metadata, err := yamlSection(root, "metadata", microserviceMetadataFields, true)
	if err != nil {
		return MicroserviceInput{}, err
	}
	spec, err := yamlSection(root, "spec", microserviceSpecFields, true)
	if err != nil {
		return MicroserviceInput{}, err
	}
	if _, err = document.YAMLString(document.YAMLValue(metadata, "namespace"), "namespace"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Name, err = document.YAMLString(document.YAMLValue(spec, "name"), "name"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Name == nil {
		if in.Name, err = document.YAMLString(document.YAMLValue(metadata, "name"), "name"); err != nil {
			return MicroserviceInput{}, err
		}
	}
	if in.Application, err = document.YAMLString(document.YAMLValue(spec, "application"), "application"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Name == nil {
		return MicroserviceInput{}, document.Missing("name")
	}
	switch parts := strings.Split(*in.Name, "/"); len(parts) {
	case 1:
	case 2:
		in.Application, in.Name = &parts[0], &parts[1]
	default:
		return MicroserviceInput{}, document.Errorf("Invalid name %s", *in.Name)
	}
	if in.Application == nil {
		return MicroserviceInput{}, document.Missing("application")
	}
	agent, err := yamlSection(spec, "spec.agent", microserviceAgentFields, false)
	if err != nil {
		return MicroserviceInput{}, err
	}
	if in.Agent, err = document.YAMLString(document.YAMLValue(agent, "name"), "agent.name"); err != nil {
		return MicroserviceInput{}, err
	}
	container, err := yamlSection(spec, "spec.container", microserviceContainerFields, false)
	if err != nil {
		return MicroserviceInput{}, err
	}
	if in.HostNetworkMode, err = document.YAMLBool(document.YAMLValue(container, "hostNetworkMode"), "container.hostNetworkMode"); err != nil {
		return MicroserviceInput{}, err
	}
	return in, nil
}

// yamlSection is the mapping at path (metadata, spec, spec.agent) below
// parent, with only the keys of known. An absent one is an empty mapping,
// or an error when required: the reference requires the metadata and spec
// of every document it parses but an agent's.
func yamlSection(parent *yaml.Node, path string, known document.FieldSet, required bool) (*yaml.Node, error) {
	key := path[strings.LastIndex(path, ".")+1:]
	n := document.YAMLValue(parent, key)
	switch {
	case document.IsNullYAML(n) && required:
		return nil, document.Errorf("Invalid YAML format: missing %s", path)
	case document.IsNullYAML(n):
		n = &yaml.Node{Kind: yaml.MappingNode}
	case n.Kind != yaml.MappingNode:
		return nil, document.Errorf("Invalid YAML format: %s must be a mapping", path)
	}
	return n, document.CheckYAMLFields(n, path, known)
}
