package service

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// DefaultTagPrefix is the default SERVICE_ANNOTATION_TAG.
const DefaultTagPrefix = "service.iofog.org/tag"

// AllToken on an agent (`<prefix>: all`) selects every Service.
const AllToken = "all"

// MaxAnnotationsSize is Kubernetes' limit on the total size of an object's
// annotations (keys plus values), 256 KiB.
const MaxAnnotationsSize = 256 << 10

// TagRule is the one distribution rule (design decision 3), used in both
// directions so that "which agents does this Service reach" and "which
// Services does this agent listen for" can never disagree.
//
// A Service stores bare tokens (checkout); an agent stores prefixed tags
// (`service.iofog.org/tag: checkout`, exactly one space after the colon).
type TagRule struct {
	Prefix string // e.g. DefaultTagPrefix
}

// IsDistributionToken reports whether a Service tag takes part in
// distribution. Tags with ':' or '=' are Kubernetes annotations only.
func IsDistributionToken(serviceTag string) bool {
	return serviceTag != "" && !strings.ContainsAny(serviceTag, ":=")
}

// AgentTagFor is the agent tag that selects token.
func (r TagRule) AgentTagFor(token string) string {
	return r.Prefix + ": " + token
}

// agentToken returns the token an agent tag carries: the text after
// "<prefix>: ", when that text is a valid token. Nothing is trimmed, so
// both directions compare the same strings.
func (r TagRule) agentToken(agentTag string) (string, bool) {
	t, ok := strings.CutPrefix(agentTag, r.Prefix+": ")
	if !ok || !IsDistributionToken(t) {
		return "", false
	}
	return t, true
}

// AgentTokens returns the distinct tokens the agent's tags carry, in order
// (AllToken included), and whether one of them is AllToken.
func (r TagRule) AgentTokens(agentTags []string) (tokens []string, all bool) {
	for _, tag := range agentTags {
		t, ok := r.agentToken(tag)
		if !ok || slices.Contains(tokens, t) {
			continue
		}
		tokens = append(tokens, t)
		all = all || t == AllToken
	}
	return tokens, all
}

// Selects reports whether an agent with agentTags listens for a Service
// with serviceTags (the agent → services direction).
func (r TagRule) Selects(agentTags, serviceTags []string) bool {
	tokens, all := r.AgentTokens(agentTags)
	if all {
		return true
	}
	for _, s := range serviceTags {
		if IsDistributionToken(s) && slices.Contains(tokens, s) {
			return true
		}
	}
	return false
}

// ReasonHub is why the hub router listens for a service: it holds the
// service's hub listener (default router or defaultBridge).
const ReasonHub = "hub"

// ListenReason says why an agent's router with agentTags listens for a
// Service with serviceTags: the first of its tags that selects the
// Service, else ReasonHub when hub (the router holds the Service's hub
// listener); "" when it does not listen. A tag wins over the hub.
func (r TagRule) ListenReason(agentTags, serviceTags []string, hub bool) string {
	for _, tag := range agentTags {
		if r.Selects([]string{tag}, serviceTags) {
			return tag
		}
	}
	if hub {
		return ReasonHub
	}
	return ""
}

// SelectingAgentTags returns the exact agent tags, any one of which selects
// a Service with serviceTags (the service → agents direction, e.g. the
// values to look agents up by): `<prefix>: all` first, then one per
// distinct distribution token.
func (r TagRule) SelectingAgentTags(serviceTags []string) []string {
	out := []string{r.AgentTagFor(AllToken)}
	for _, s := range serviceTags {
		if t := r.AgentTagFor(s); IsDistributionToken(s) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// ReasonCode classifies one agent tag against one Service.
type ReasonCode string

const (
	ReasonAll          ReasonCode = "all"                   // `<prefix>: all`: selects every Service
	ReasonMatched      ReasonCode = "matched"               // the token is one of the Service's tags
	ReasonNotOnService ReasonCode = "token-not-on-service"  // a valid token the Service does not carry
	ReasonNoPrefix     ReasonCode = "no-prefix"             // not a distribution tag at all
	ReasonNoSpace      ReasonCode = "no-space-after-colon"  // `<prefix>:checkout`
	ReasonEmptyToken   ReasonCode = "empty-token"           // `<prefix>: `
	ReasonTokenColon   ReasonCode = "token-contains-colon"  // `<prefix>: a:b`
	ReasonTokenEquals  ReasonCode = "token-contains-equals" // `<prefix>: a=b`
)

// Reason says what one agent tag contributes to selecting a Service.
type Reason struct {
	AgentTag string     `json:"agentTag"`
	Code     ReasonCode `json:"code"`
	Token    string     `json:"token,omitempty"` // the text after the prefix and colon, when there is one
	Message  string     `json:"message"`         // for humans
}

// Selects reports whether this tag alone selects the Service.
func (r Reason) Selects() bool { return r.Code == ReasonAll || r.Code == ReasonMatched }

// Explanation says why an agent does or does not listen for a Service.
type Explanation struct {
	Selected bool     `json:"selected"`
	Tags     []Reason `json:"tags"` // one per agent tag, in order
	// IgnoredServiceTags are the Service's tags that are not distribution
	// tokens (annotation tags with ':' or '=', or empty ones).
	IgnoredServiceTags []string `json:"ignoredServiceTags,omitempty"`
}

// Explain is Selects with the reasons; Explain(a, s).Selected always equals
// Selects(a, s).
func (r TagRule) Explain(agentTags, serviceTags []string) Explanation {
	var e Explanation
	for _, s := range serviceTags {
		if !IsDistributionToken(s) {
			e.IgnoredServiceTags = append(e.IgnoredServiceTags, s)
		}
	}
	for _, tag := range agentTags {
		reason := r.explainTag(tag, serviceTags)
		e.Selected = e.Selected || reason.Selects()
		e.Tags = append(e.Tags, reason)
	}
	return e
}

func (r TagRule) explainTag(tag string, serviceTags []string) Reason {
	reason := Reason{AgentTag: tag}
	token, spaced := strings.CutPrefix(tag, r.Prefix+": ")
	if !spaced {
		rest, colon := strings.CutPrefix(tag, r.Prefix+":")
		if !colon {
			reason.Code = ReasonNoPrefix
			reason.Message = fmt.Sprintf("not a distribution tag: it does not start with %q", r.Prefix+": ")
			return reason
		}
		reason.Code, reason.Token = ReasonNoSpace, rest
		reason.Message = fmt.Sprintf("the colon must be followed by exactly one space, as in %q", r.AgentTagFor(strings.TrimSpace(rest)))
		return reason
	}
	reason.Token = token
	switch {
	case token == "":
		reason.Code, reason.Message = ReasonEmptyToken, "the token after the prefix is empty"
	case strings.Contains(token, ":"):
		reason.Code, reason.Message = ReasonTokenColon, fmt.Sprintf("token %q contains ':', which no distribution tag can contain", token)
	case strings.Contains(token, "="):
		reason.Code, reason.Message = ReasonTokenEquals, fmt.Sprintf("token %q contains '=', which no distribution tag can contain", token)
	case token == AllToken:
		reason.Code, reason.Message = ReasonAll, "selects every service"
	case slices.Contains(serviceTags, token):
		reason.Code, reason.Message = ReasonMatched, fmt.Sprintf("the service has tag %q", token)
	default:
		reason.Code, reason.Message = ReasonNotOnService, fmt.Sprintf("the service has no tag %q", token)
	}
	return reason
}

// annotation splits one tag into an annotation (design decision 4).
func annotation(tag string) (key, value string) {
	if k, rest, ok := strings.Cut(tag, ":"); ok {
		v, _, _ := strings.Cut(rest, ":") // text after a second colon is dropped
		return strings.TrimSpace(k), strings.TrimSpace(v)
	}
	if k, v, ok := strings.Cut(tag, "="); ok {
		return strings.TrimSpace(k), strings.TrimSpace(v)
	}
	return strings.TrimSpace(tag), ""
}

// Annotations turns Service tags into Kubernetes Service annotations: split
// on the first ':' (or, without a ':', the first '='), both sides trimmed,
// text after a second ':' dropped; a bare tag gets an empty value. Later
// tags with the same key overwrite earlier ones.
func Annotations(tags []string) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v := annotation(t)
		out[k] = v
	}
	return out
}

// ValidateAnnotations checks the annotations tags produce as the Kubernetes
// API server would, so a bad tag is a 400 now rather than a failed reconcile
// later: keys are qualified names (compared lower-cased, as Kubernetes
// does), and the total size is at most MaxAnnotationsSize. Values are free.
func ValidateAnnotations(tags []string) error {
	for _, t := range tags {
		k, _ := annotation(t)
		if msgs := content.IsLabelKey(strings.ToLower(k)); len(msgs) > 0 {
			return invalidf("Invalid tag '%s': %s", t, strings.Join(msgs, "; "))
		}
	}
	size := 0
	for k, v := range Annotations(tags) {
		size += len(k) + len(v)
	}
	if size > MaxAnnotationsSize {
		return invalidf("Invalid tags: their annotations total %d bytes, more than the Kubernetes limit of %d bytes", size, MaxAnnotationsSize)
	}
	return nil
}
