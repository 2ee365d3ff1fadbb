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
// unplaceable: the write succeeds and their reconciles fail. The answer
// (a dry run's too) names them in Warning headers, as Kubernetes warns
// (RFC 7234 code 299), so an operator sees the breakage before making it.

// maxWarnings caps the Warning headers of one answer; one more says how
// many were left out.
const maxWarnings = 20

// breakage is a service that an inventory change leaves unplaceable.
type breakage struct {
	Service, Reason string
}

// brokenServices re-places the named services against the inventory as
// tx sees it (after the write) with service.Place, the rule the worker
// applies, and returns those it fails, with why. The services are read
// 500 a statement and each agent once, so that a change of the default
// router, on which every service may depend, costs a few statements per
// 500 services inside the write's transaction.
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
		if _, err := service.Place(in); err != nil {
			out = append(out, breakage{Service: svc.Name, Reason: err.Error()})
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
			out = append(out, warningValue(fmt.Sprintf("and %d more services %s fail", len(broken)-maxWarnings, verb)))
			break
		}
		out = append(out, warningValue(fmt.Sprintf("service %s %s fail: %s", b.Service, verb, b.Reason)))
	}
	return out
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
