package cli

import (
	"strings"
	"testing"
)

// status says what a service's status alone does not: a ready service
// whose hub lost its host has no endpoint, and status says so by name.
func TestCLIStatusSaysAReadyServiceHasNoEndpoint(t *testing.T) {
	f := newFleet(t)
	f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc), "--wait")
	if out, _ := f.must(0, "status"); strings.Contains(out, "no endpoint") {
		t.Fatalf("status with the hub's host set:\n%s", out)
	}
	f.must(0, "apply", "-f", f.file("hub.yaml", "kind: Agent\nmetadata: {name: hub}\nspec: {routerMode: interior, defaultRouter: true}\n"))
	out, _ := f.must(0, "status")
	if !strings.Contains(out, "service checkout: no endpoint: its hub agent hub has no host") {
		t.Errorf("status once the hub has no host:\n%s", out)
	}
}
