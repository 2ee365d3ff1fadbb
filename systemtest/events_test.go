package systemtest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIEvents: what happened to a service, through the real binary:
// describe service ends with its events, and the events verb lists every
// service's, newest first.
func TestCLIEvents(t *testing.T) {
	s := newSystem(t, "sqlite", 1)
	cliMust(t, s.url, 0, "apply", "-f", cliFile(t, "fleet.yaml", cliFleet), "--wait", "--timeout", "60s")
	cliMust(t, s.url, 0, "apply", "-f", cliFile(t, "fog-a-none.yaml", cliFogANone))
	cliMust(t, s.url, 3, "reconcile", "checkout", "--wait", "--timeout", "60s")

	r := cliMust(t, s.url, 0, "describe", "service", "checkout")
	events := r.stdout[strings.Index(r.stdout, "\nEvents:\n")+1:]
	if !strings.HasPrefix(events, "Events:\n") || strings.Index(r.stdout, "Distribution:") > strings.Index(r.stdout, "Events:") {
		t.Fatalf("describe does not end with the events:\n%s", r)
	}
	// An age, and how often the event repeated (a resync finding the same).
	const ago = `\d+s( \(x\d+ over \d+s\))?`
	for _, line := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  AGE\s+TYPE\s+REASON\s+MESSAGE$`),
		regexp.MustCompile(`(?m)^  ` + ago + `\s+Normal\s+Created\s+created with bridge port 10024$`),
		regexp.MustCompile(`(?m)^  ` + ago + `\s+Normal\s+Ready\s+generation 1 reconciled: its connector and hub listener are in place$`),
		regexp.MustCompile(`(?m)^  ` + ago + `\s+Normal\s+ReconcileRequested\s+reconcile requested through the API$`),
		regexp.MustCompile(`(?m)^  ` + ago + `\s+Warning\s+Failed\s+Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent$`),
	} {
		if !line.MatchString(events) {
			t.Errorf("describe's events lack %s:\n%s", line, events)
		}
	}
	// Oldest first, as kubectl describe: created is the first row.
	if first := strings.Split(events, "\n")[2]; !strings.Contains(first, "Created") {
		t.Errorf("describe's first event is %q, want Created", first)
	}

	r = cliMust(t, s.url, 0, "events")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if !cliHasLine(lines[0], "LAST SEEN", "TYPE", "REASON", "SERVICE", "MESSAGE") ||
		!regexp.MustCompile(`(?m)^\d+s\s+Normal\s+Created\s+vendor\s+created with bridge port 10025$`).MatchString(r.stdout) ||
		!strings.Contains(lines[1], "checkout") || !strings.Contains(lines[1], "Failed") {
		t.Errorf("events, newest first (checkout's failure):\n%s", r)
	}

	r = cliMust(t, s.url, 0, "events", "--service", "vendor", "-o", "json")
	var vendor []struct {
		Service, Reason string
		LastTimestamp   time.Time
	}
	if err := json.Unmarshal([]byte(r.stdout), &vendor); err != nil || len(vendor) != 2 ||
		vendor[0].Reason != "Ready" || vendor[1].Reason != "Created" || vendor[1].Service != "vendor" ||
		vendor[0].LastTimestamp.Before(vendor[1].LastTimestamp) {
		t.Errorf("events --service vendor -o json: %v\n%s", err, r)
	}
	r = runCLI(t, s.url, "events", "--service", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "Service with name nope not found") {
		t.Errorf("events of an unknown service:\n%s", r)
	}
}
