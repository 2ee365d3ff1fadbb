package inventory

import (
	"encoding/json"
	"maps"
	"slices"

	"gopkg.in/yaml.v3"

	"svcbridge/document"
	"svcbridge/wire"
)

// The documents a client sends for an agent or a microservice, decoded
// beside the rules that judge them (as package service decodes a Service).
// A decoder refuses a malformed document with a *document.Error.

// AgentInput is an agent as a client sent it: nil fields were absent.
// UpstreamRouters are names or uuids until the caller resolves them.
type AgentInput struct {
	UUID            *string
	Name            *string
	Host            *string
	RouterMode      *string
	Tags            *[]string
	UpstreamRouters *[]string
	DefaultRouter   *bool
}

// Apply returns base with the present fields replaced; slices are copied.
func (in AgentInput) Apply(base Agent) Agent {
	a := base
	a.Tags = append([]string{}, base.Tags...)
	a.UpstreamRouters = append([]string{}, base.UpstreamRouters...)
	if in.Name != nil {
		a.Name = *in.Name
	}
	if in.Host != nil {
		a.Host = *in.Host
	}
	if in.RouterMode != nil {
		a.RouterMode = *in.RouterMode
	}
	if in.Tags != nil {
		a.Tags = append([]string{}, (*in.Tags)...)
	}
	if in.UpstreamRouters != nil {
		a.UpstreamRouters = append([]string{}, (*in.UpstreamRouters)...)
	}
	if in.DefaultRouter != nil {
		a.DefaultRouter = *in.DefaultRouter
	}
	return a
}

// agentFields are the keys an agent JSON document may carry: what the
// decoder reads, plus createdAt, updatedAt, upstreamRouterNames, links,
// router and configChange, which GET answers (accepted and ignored, so a
// GET answer can be sent back).
var agentFields = document.NewFieldSet("uuid", "name", "host", "routerMode", "tags", "upstreamRouters",
	"defaultRouter", "createdAt", "updatedAt", "upstreamRouterNames", "links", "router", "configChange")

// DecodeAgentJSON reads the fields of an agent; other keys are refused.
func DecodeAgentJSON(body []byte) (AgentInput, error) {
	obj, err := document.ReadJSONFields(body, agentFields)
	if err != nil {
		return AgentInput{}, err
	}
	return readAgentJSON(obj, "defaultRouter")
}

// readAgentJSON reads the fields of an agent from a JSON object, the
// default router under defaultRouterKey (the reference's documents name it
// isSystem).
func readAgentJSON(obj map[string]json.RawMessage, defaultRouterKey string) (in AgentInput, err error) {
	if in.UUID, err = document.JSONField[string](obj, "uuid", "string"); err != nil {
		return AgentInput{}, err
	}
	if in.Name, err = document.JSONField[string](obj, "name", "string"); err != nil {
		return AgentInput{}, err
	}
	if in.Host, err = document.JSONField[string](obj, "host", "string"); err != nil {
		return AgentInput{}, err
	}
	if in.RouterMode, err = document.JSONField[string](obj, "routerMode", "string"); err != nil {
		return AgentInput{}, err
	}
	if in.Tags, err = document.JSONField[[]string](obj, "tags", "array of strings"); err != nil {
		return AgentInput{}, err
	}
	if in.UpstreamRouters, err = document.JSONField[[]string](obj, "upstreamRouters", "array of strings"); err != nil {
		return AgentInput{}, err
	}
	if in.DefaultRouter, err = document.JSONField[bool](obj, defaultRouterKey, "boolean"); err != nil {
		return AgentInput{}, err
	}
	return in, nil
}

// Agent YAML kinds: AgentConfig is what iofogctl/potctl write for an
// agent's configuration; both carry the same fields here.
var agentKinds = []string{"Agent", "AgentConfig"}

// Keys of an agent YAML document below the top level.
var (
	agentMetadataFields = document.NewFieldSet("name", "tags")
	agentSpecFields     = document.NewFieldSet("host", "routerMode", "upstreamRouters", "defaultRouter")
)

// DecodeAgentYAML reads one kind: Agent or AgentConfig document. The
// document is the whole desired agent, so absent metadata.tags and
// spec.upstreamRouters are empty lists (never nil).
func DecodeAgentYAML(body []byte) (AgentInput, error) {
	return document.ReadYAML(body, agentKinds, readAgentYAML)
}

func readAgentYAML(root *yaml.Node) (in AgentInput, err error) {
	metadata, err := yamlSection(root, "metadata", agentMetadataFields, true)
	if err != nil {
		return AgentInput{}, err
	}
	// An absent spec is an agent with every default (an edge router).
	spec, err := yamlSection(root, "spec", agentSpecFields, false)
	if err != nil {
		return AgentInput{}, err
	}
	if in.Name, err = document.YAMLString(document.YAMLValue(metadata, "name"), "name"); err != nil {
		return AgentInput{}, err
	}
	if in.Name == nil {
		return AgentInput{}, document.Missing("name")
	}
	if in.Tags, err = document.YAMLStringList(document.YAMLValue(metadata, "tags"), "tags"); err != nil {
		return AgentInput{}, err
	}
	if in.Host, err = document.YAMLString(document.YAMLValue(spec, "host"), "host"); err != nil {
		return AgentInput{}, err
	}
	if in.RouterMode, err = document.YAMLString(document.YAMLValue(spec, "routerMode"), "routerMode"); err != nil {
		return AgentInput{}, err
	}
	if in.UpstreamRouters, err = document.YAMLStringList(document.YAMLValue(spec, "upstreamRouters"), "upstreamRouters"); err != nil {
		return AgentInput{}, err
	}
	if in.DefaultRouter, err = document.YAMLBool(document.YAMLValue(spec, "defaultRouter"), "defaultRouter"); err != nil {
		return AgentInput{}, err
	}
	return in, nil
}

// MicroserviceInput is a microservice as a client sent it: nil fields were absent.
// Agent is a name or a uuid.
type MicroserviceInput struct {
	UUID            *string
	Application     *string
	Name            *string
	Agent           *string
	HostNetworkMode *bool
}

// microserviceFields are the keys a microservice JSON document may carry:
// every key GET answers, so that an answer can be sent back; the decoder
// reads uuid, application, name, agent (or the reference's iofogUuid) and
// hostNetworkMode, and ignores the others.
var microserviceFields = document.NewFieldSet(answerKeys(wire.Microservice{})...)

// answerKeys are the keys of v's JSON object.
func answerKeys(v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // wire types of strings, numbers and lists
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		panic(err)
	}
	return slices.Collect(maps.Keys(obj))
}

func DecodeMicroserviceJSON(body []byte) (MicroserviceInput, error) {
	obj, err := document.ReadJSONFields(body, microserviceFields)
	if err != nil {
		return MicroserviceInput{}, err
	}
	var in MicroserviceInput
	if in.UUID, err = document.JSONField[string](obj, "uuid", "string"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Application, err = document.JSONField[string](obj, "application", "string"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Name, err = document.JSONField[string](obj, "name", "string"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Agent, err = document.JSONField[string](obj, "agent", "string"); err != nil {
		return MicroserviceInput{}, err
	}
	if in.Agent == nil {
		// iofogUuid is the reference controller's name of the agent (GET
		// answers both): a reference client moves a microservice by it.
		// agent wins when both are sent.
		if in.Agent, err = document.JSONField[string](obj, "iofogUuid", "string"); err != nil {
			return MicroserviceInput{}, err
		}
	}
	if in.HostNetworkMode, err = document.JSONField[bool](obj, "hostNetworkMode", "boolean"); err != nil {
		return MicroserviceInput{}, err
	}
	return in, nil
}

// Apply returns base with the present fields replaced; Agent is left to
// the caller, which resolves the reference.
func (in MicroserviceInput) Apply(base Microservice) Microservice {
	m := base
	if in.Application != nil {
		m.Application = *in.Application
	}
	if in.Name != nil {
		m.Name = *in.Name
	}
	if in.HostNetworkMode != nil {
		m.HostNetworkMode = *in.HostNetworkMode
	}
	return m
}
