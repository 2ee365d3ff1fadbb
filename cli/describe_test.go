package cli

import (
	"regexp"
	"strings"
	"testing"

	"svcbridge/routerconfig"
	"svcbridge/wire"
)

// describe's LISTENING column says whether the agent's router serves the
// service's port: never "yes" for a listener its router refused, nor for
// any listener of a service whose provisioning failed (its connector is
// not in place: the port carries nothing).
func TestCLIDescribeListeningIsNeverYesForWhatIsNotServed(t *testing.T) {
	f := newFleet(t)
	// fog-b listens for checkout too; its router side reports.
	doc := fleetDoc + `---
kind: AgentConfig
metadata:
  name: fog-b
  tags: ["service.iofog.org/tag: checkout"]
spec: {routerMode: edge, upstreamRouters: [hub]}
`
	out, _ := f.must(0, "apply", "-f", f.file("fleet.yaml", doc), "--wait")
	tokens := agentTokens(t, out)
	listening := func(out, name string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return l
			}
		}
		t.Fatalf("no row of %s in:\n%s", name, out)
		return ""
	}
	out, _ = f.must(0, "describe", "agent", "fog-b")
	if row := listening(out, "checkout"); !regexp.MustCompile(`\s+yes\s+pending\s+no$`).MatchString(row) {
		t.Errorf("describe agent fog-b before its router side reported: %q\n%s", row, out)
	}

	// fog-b's router refuses the listener: its port is taken there.
	f.report(tokens["fog-b"], wire.FailedBridge{Type: routerconfig.EntityTCPListener, Name: routerconfig.ListenerName("checkout"), Reason: "Address already in use"})
	out, _ = f.must(0, "describe", "agent", "fog-b")
	if row := listening(out, "checkout"); !strings.Contains(row, " no (router refused)  failed: Address already in use ") {
		t.Errorf("describe agent fog-b after its router refused the listener: %q\n%s", row, out)
	}
	out, _ = f.must(0, "describe", "service", "checkout")
	if row := listening(out, "fog-b"); !strings.Contains(row, " no (router refused)  failed: Address already in use ") {
		t.Errorf("describe service checkout after fog-b's router refused the listener: %q\n%s", row, out)
	}
	if row := listening(out, "fog-a"); !strings.Contains(row, " yes ") {
		t.Errorf("describe service checkout: fog-a's listener: %q\n%s", row, out)
	}

	// checkout fails: its backend's agent loses its router. The
	// listeners left on the hub and fog-b serve nothing.
	f.must(0, "apply", "-f", f.file("none.yaml", "kind: AgentConfig\nmetadata: {name: fog-a, tags: [\"service.iofog.org/tag: checkout\"]}\nspec: {routerMode: none}\n"))
	out, _ = f.must(0, "describe", "service", "checkout")
	if !strings.Contains(out, "Status:           failed\n") {
		t.Fatalf("checkout did not fail:\n%s", out)
	}
	for _, agent := range []string{"hub", "fog-b"} {
		if row := listening(out, agent); !strings.Contains(row, " no (service failed) ") {
			t.Errorf("describe service checkout, failed: %s's listener: %q\n%s", agent, row, out)
		}
		agentOut, _ := f.must(0, "describe", "agent", agent)
		if row := listening(agentOut, "checkout"); !strings.Contains(row, " no (service failed) ") {
			t.Errorf("describe agent %s with checkout failed: %q\n%s", agent, row, agentOut)
		}
	}
}
