package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/gin-gonic/gin"

	"svcbridge/service"
	"svcbridge/store"
)

// An agent or microservice write can leave services that depend on it
// unplaceable: the write succeeds and their reconciles fail. It can also
// leave them placed without the endpoint clients reached them at (the hub
// agent's host removed). The answer (a dry run's too) names them in
// Warning headers, as Kubernetes warns (RFC 7234 code 299), so an operator
// sees the breakage before making it.

// maxWarnings caps the Warning headers of one answer; one more says how
// many were left out.
const maxWarnings = 20

// breakage is a service that an inventory change leaves unplaceable, or
// placed without the endpoint it had.
type breakage struct {
	Service, Reason string
	// LosesEndpoint says the service stays placed but loses its endpoint
	// (service.Unreachable) rather than failing.
	LosesEndpoint bool
}

// brokenServices re-places the named services against the inventory as
// tx sees it (after the write) with service.Place, the rule the worker
// applies, and returns those it fails, with why, and those it leaves
// without the endpoint they had (service.Unreachable). The services are
// read 500 a statement and each agent once, so that a change of the
// default router, on which every service may depend, costs a few
// statements per 500 services inside the write's transaction.
func (s *Server) brokenServices(ctx context.Context, tx *store.Tx, names []string) ([]breakage, error) {
	svcs, err := tx.ServicesToPlace(ctx, names)
	if err != nil {
		return nil, err
	}
	inputs := tx.PlacementInputs(s.ControlPlane)
	var out []breakage
	for _, svc := range svcs {
		in, err := inputs.Load(ctx, svc)
		if err != nil {
			return nil, err
		}
		p, err := service.Place(in)
		if err != nil {
			out = append(out, breakage{Service: svc.Name, Reason: err.Error()})
			continue
		}
		if service.Unreachable(svc, in.AgentName) != "" {
			continue // it has no endpoint to lose
		}
		if why := service.Unreachable(svc.WithPlacement(p, s.ControlPlane), in.AgentName); why != "" {
			out = append(out, breakage{Service: svc.Name, Reason: why, LosesEndpoint: true})
		}
	}
	return out, nil
}

// warningValues are the Warning header values naming broken, in the
// future of a real write ("will fail") or of a dry run ("would fail").
func warningValues(broken []breakage, dryRun bool) []string {
	verb := "will"
	if dryRun {
		verb = "would"
	}
	var out []string
	for i, b := range broken {
		if i == maxWarnings {
			out = append(out, warningValue(fmt.Sprintf("and %d more services %s %s", len(broken)-maxWarnings, verb, effects(broken[i:]))))
			break
		}
		effect := "fail"
		if b.LosesEndpoint {
			effect = "lose its endpoint"
		}
		out = append(out, warningValue(fmt.Sprintf("service %s %s %s: %s", b.Service, verb, effect, b.Reason)))
	}
	return out
}

// effects says what happens to the services of broken, together.
func effects(broken []breakage) string {
	lose := 0
	for _, b := range broken {
		if b.LosesEndpoint {
			lose++
		}
	}
	switch lose {
	case 0:
		return "fail"
	case len(broken):
		return "lose their endpoint"
	}
	return "fail or lose their endpoint"
}

// warningValue is text as a Warning header value: code 299, no agent,
// and text as a quoted-string (backslash and quote escaped, control
// characters, which a header cannot carry, as spaces).
func warningValue(text string) string {
	var b strings.Builder
	b.WriteString(`299 - "`)
	for _, r := range text {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// warnBroken adds the Warning headers of broken to c's answer.
func warnBroken(c *gin.Context, broken []breakage) {
	for _, v := range warningValues(broken, isDryRun(c.Request.Context())) {
		c.Writer.Header().Add("Warning", v)
	}
}

// warnFirstFreePort adds to a dry-run create's answer that the bridgePort
// it answers, the first free one (no ?bridgePort=), is no reservation: a
// port is assigned on create, so a service created first takes it. A
// dry run of several new services (apply --dry-run of a file, which sends
// each document alone, so that the server cannot know of the others)
// answers each the same port, and only the first will have it.
func warnFirstFreePort(c *gin.Context, name string, port int) {
	c.Writer.Header().Add("Warning", warningValue(fmt.Sprintf(
		"service %s: bridgePort %d is the first free port now, not a reservation: ports are assigned on create, so a service created before it (another new service of the same apply too) takes it first",
		name, port)))
}
