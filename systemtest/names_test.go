package systemtest

import (
	"regexp"
	"strings"
	"testing"
)

// Issue 33: wherever a person reads (exports, diff, describe, errors),
// agents and microservices are named as the file named them, never by the
// uuids the store keeps; an export applies back unchanged.

// cliBridgedFleet is checkout bridged through region-1, one of fog-d's
// upstream routers, not through the default router.
const cliBridgedFleet = `kind: Agent
metadata:
  name: hub
spec:
  routerMode: interior
  defaultRouter: true
  host: hub.example.com
---
kind: Agent
metadata:
  name: region-1
spec:
  routerMode: interior
  host: region-1.example.com
---
kind: Agent
metadata:
  name: fog-d
spec:
  routerMode: edge
  upstreamRouters:
    - hub
    - region-1
---
kind: Microservice
metadata:
  name: orders/checkout
spec:
  agent: fog-d
---
kind: Service
metadata:
  name: checkout
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  defaultBridge: region-1
`

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// specOf is the lines of a get -o yaml document before its status.
func specOf(doc string) string {
	before, _, _ := strings.Cut(doc, "\nstatus:")
	return before + "\n"
}

func TestCLINamesNotUUIDs(t *testing.T) {
	s := newSystem(t, "sqlite", 1)
	cliMust(t, s.url, 0, "apply", "-f", cliFile(t, "fleet.yaml", cliBridgedFleet), "--wait", "--timeout", "60s")

	t.Run("exports name what the file named", func(t *testing.T) {
		svc := cliMust(t, s.url, 0, "get", "service", "checkout", "-o", "yaml").stdout
		agent := cliMust(t, s.url, 0, "get", "agent", "fog-d", "-o", "yaml").stdout
		ms := cliMust(t, s.url, 0, "get", "microservice", "orders/checkout", "-o", "yaml").stdout
		for _, c := range []struct{ doc, want string }{
			{svc, "  resource: orders/checkout\n"},
			{svc, "  defaultBridge: region-1\n"},
			{agent, "  upstreamRouters:\n    - hub\n    - region-1\n"},
			{ms, "  agent: fog-d\n"},
		} {
			if !strings.Contains(specOf(c.doc), c.want) {
				t.Errorf("export lacks %q:\n%s", c.want, c.doc)
			}
		}
		for _, doc := range []string{svc, agent, ms} {
			if id := uuidPattern.FindString(specOf(doc)); id != "" {
				t.Errorf("export names %s by uuid:\n%s", id, doc)
			}
		}
		// The server names the placement's agents beside their uuids.
		if !strings.Contains(svc, "connectorAgentName: fog-d") || !strings.Contains(svc, "hubAgentName: region-1") {
			t.Errorf("export's status does not name the placement's agents:\n%s", svc)
		}
	})

	t.Run("an export applies back unchanged", func(t *testing.T) {
		var docs []string
		for _, kind := range []string{"agents", "microservices", "services"} {
			docs = append(docs, cliMust(t, s.url, 0, "get", kind, "-o", "yaml").stdout)
		}
		export := cliFile(t, "export.yaml", strings.Join(docs, "---\n"))
		r := cliMust(t, s.url, 0, "apply", "-f", export)
		if got := strings.Count(r.stdout, " unchanged\n"); got != 5 || strings.Count(r.stdout, "\n") != 5 {
			t.Errorf("apply of the export, want 5 objects unchanged:\n%s", r)
		}
		if r = cliMust(t, s.url, 0, "diff", "-f", export); r.stdout != "" {
			t.Errorf("diff of the export:\n%s", r)
		}
		if svc, _ := s.getService("checkout"); svc.Generation != 1 {
			t.Errorf("applying the export bumped checkout to generation %d", svc.Generation)
		}
	})

	fogDAlone := cliFile(t, "fog-d.yaml", "kind: Agent\nmetadata:\n  name: fog-d\nspec:\n  routerMode: edge\n  upstreamRouters:\n    - hub\n")

	t.Run("diff names upstream routers", func(t *testing.T) {
		r := cliMust(t, s.url, 1, "diff", "-f", fogDAlone)
		if !strings.Contains(r.stdout, "\n     - hub\n-    - region-1\n") || uuidPattern.MatchString(r.stdout) {
			t.Errorf("diff of fog-d without region-1, want region-1 removed by name:\n%s", r)
		}
	})

	t.Run("a placement error names the agents", func(t *testing.T) {
		cliMust(t, s.url, 0, "apply", "-f", fogDAlone)
		s.waitStatus("checkout", "failed")
		const want = "Invalid router connection, router region-1 is not connected to fog-d"
		r := cliMust(t, s.url, 0, "describe", "service", "checkout")
		if !strings.Contains(r.stdout, "Default bridge:   region-1\n") || !strings.Contains(r.stdout, "Error:            "+want) {
			t.Errorf("describe of the failed checkout, want bridge region-1 and error %q:\n%s", want, r)
		}
		r = cliMust(t, s.url, 0, "events", "--service", "checkout", "-o", "yaml")
		if !strings.Contains(r.stdout, want) {
			t.Errorf("events of the failed checkout lack %q:\n%s", want, r)
		}
		// A write refused for the same reason says it by name too, even
		// when the file names the bridge by uuid.
		var region struct{ UUID string }
		s.must(200, "GET", "/api/v3/agents/region-1", nil, &region)
		other := cliFile(t, "other.yaml", "kind: Service\nmetadata:\n  name: other\nspec:\n  type: agent\n  resource: fog-d\n  targetPort: 22\n  defaultBridge: "+region.UUID+"\n")
		r = runCLI(t, s.url, "apply", "-f", other)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("apply of a service bridged through region-1 by uuid, want it refused with %q:\n%s", want, r)
		}
	})
}
