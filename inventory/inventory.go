// Package inventory holds the agents and microservices that Services refer
// to, and the pure rules for them. The rules refuse invalid input with a
// *document.Error, as the document readers do.
package inventory

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"svcbridge/document"
)

// Agent is an edge or interior node. RouterMode is edge, interior or none;
// only routers get a router config.
type Agent struct {
	UUID            string    `json:"uuid" db:"uuid"`
	Name            string    `json:"name" db:"name"`
	Host            string    `json:"host" db:"host"`
	RouterMode      string    `json:"routerMode" db:"router_mode"`
	DefaultRouter   bool      `json:"defaultRouter" db:"default_router"`
	Tags            []string  `json:"tags" db:"-"`
	UpstreamRouters []string  `json:"upstreamRouters" db:"-"` // agent uuids
	CreatedAt       time.Time `json:"createdAt" db:"created_at"`
	UpdatedAt       time.Time `json:"updatedAt" db:"updated_at"`
}

// HasRouter reports whether the agent runs a router.
func (a Agent) HasRouter() bool { return a.RouterMode != RouterNone && a.RouterMode != "" }

// ModesWithRouter are the router modes of the agents that HasRouter
// accepts: what a query asks for when it selects agents with a router.
func ModesWithRouter() []string {
	var out []string
	for _, mode := range routerModes {
		if (Agent{RouterMode: mode}).HasRouter() {
			out = append(out, mode)
		}
	}
	return out
}

// Microservice is a workload placed on an agent.
type Microservice struct {
	UUID            string    `json:"uuid" db:"uuid"`
	Application     string    `json:"application" db:"application"`
	Name            string    `json:"name" db:"name"`
	AgentUUID       string    `json:"agent" db:"agent_uuid"`
	HostNetworkMode bool      `json:"hostNetworkMode" db:"host_network_mode"`
	CreatedAt       time.Time `json:"createdAt" db:"created_at"`
	UpdatedAt       time.Time `json:"updatedAt" db:"updated_at"`
}

// Router modes.
const (
	RouterEdge     = "edge"
	RouterInterior = "interior"
	RouterNone     = "none"
)

// routerModes are the router modes an agent may have.
var routerModes = []string{RouterEdge, RouterInterior, RouterNone}

// Limits on input, one set for agents and services. Tags are stored one
// per row and a service's become annotations: 64 tags of up to 1024 bytes
// leave room for long annotation values (ARNs, CIDR lists) while keeping a
// Kubernetes Service far below its 256 KiB annotation limit.
const (
	MaxTags      = 64
	MaxTagLength = 1024 // bytes
	MaxHost      = 253
	MaxUpstreams = 16
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// IsDNSLabel reports whether s has a DNS-1123 label's form (the length is
// the caller's to check, for a clearer message).
func IsDNSLabel(s string) bool { return dnsLabel.MatchString(s) }

// ValidName checks a DNS label of at most 63 characters; what names the
// field in the message.
func ValidName(what, name string) error {
	if name == "" {
		return document.Errorf("Required field '%s' is missing", what)
	}
	if len(name) > 63 || !IsDNSLabel(name) {
		return document.Errorf("Invalid format for field '%s': %q must be a DNS label (lower-case letters, digits and '-', at most 63 characters)", what, name)
	}
	return nil
}

// ValidateAgent checks an agent's own fields; references to other agents
// are the caller's to check.
func ValidateAgent(a Agent) error {
	if err := ValidName("name", a.Name); err != nil {
		return err
	}
	if !slices.Contains(routerModes, a.RouterMode) {
		return document.Errorf("Field routerMode is not one of enum values: %s", strings.Join(routerModes, ","))
	}
	if len(a.Host) > MaxHost {
		return document.Errorf("Field 'host' is longer than %d characters", MaxHost)
	}
	// The host becomes a connector's address and a serviceEndpoint.
	if a.Host != "" && !IsHostOrIP(a.Host) {
		return document.Errorf("Invalid format for field 'host': %q must be a DNS name or an IP address", a.Host)
	}
	if a.DefaultRouter && a.RouterMode != RouterInterior {
		return document.Errorf("Agent %s cannot be the default router: the default router must have routerMode interior", a.Name)
	}
	if a.RouterMode == RouterNone && len(a.UpstreamRouters) > 0 {
		return document.Errorf("Agent %s has routerMode none and so cannot have upstreamRouters", a.Name)
	}
	if len(a.UpstreamRouters) > MaxUpstreams {
		return document.Errorf("Field 'upstreamRouters' has more than %d entries", MaxUpstreams)
	}
	if err := ValidateTags(a.Tags); err != nil {
		return err
	}
	// Agents are referred to by name or uuid alike (GET /agents/{ref},
	// upstreamRouters, a service's defaultBridge): a name that looks like
	// a uuid would make those references ambiguous.
	if IsUUID(a.Name) {
		return document.Errorf("Invalid format for field 'name': %q looks like a uuid, which would make references to agents ambiguous", a.Name)
	}
	return nil
}

// NewAgent is an agent with every default: an edge router with no tags
// and no upstream routers (empty lists, never nil, as the API answers).
func NewAgent(uuid string) Agent {
	return Agent{UUID: uuid, RouterMode: RouterEdge, Tags: []string{}, UpstreamRouters: []string{}}
}

// IsUUID reports whether s is a uuid in its canonical 36-character form
// (any case), the form agents' uuids are given and shown in.
func IsUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// ParseAgentUUID checks a client-chosen agent uuid (field uuid), returning
// it in the lower-case form it is stored in.
func ParseAgentUUID(s string) (string, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", document.Errorf("Invalid format for field 'uuid': %q is not a uuid", s)
	}
	return id.String(), nil
}

// ValidateTags bounds a tag list; tags are otherwise stored verbatim.
func ValidateTags(tags []string) error {
	if len(tags) > MaxTags {
		return document.Errorf("Field 'tags' has %d tags, more than the limit of %d", len(tags), MaxTags)
	}
	for i, t := range tags {
		if len(t) > MaxTagLength {
			return document.Errorf("Field 'tags[%d]' is longer than %d characters", i, MaxTagLength)
		}
	}
	return nil
}

// ValidateMicroservice checks a microservice's own fields. Its uuid is
// free-form (ioFog's are not all uuids) but not empty.
func ValidateMicroservice(m Microservice) error {
	if m.UUID == "" {
		return document.Errorf("Invalid format for field 'uuid': empty")
	}
	if err := ValidName("application", m.Application); err != nil {
		return err
	}
	if err := ValidName("name", m.Name); err != nil {
		return err
	}
	if len(m.UUID) > 64 || !uuidish.MatchString(m.UUID) {
		return document.Errorf("Invalid format for field 'uuid': letters, digits and '-' only, at most 64 characters")
	}
	return nil
}

var uuidish = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
