package systemtest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIEventsSelectorSortBy: what happened to a service, through the
// real binary: describe service ends with its events, and the events verb
// lists every service's, newest first. Then get's -l and --sort-by.
func TestCLIEventsSelectorSortBy(t *testing.T) {
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

	// The reconcile asked for fails again (its Failed event repeats, newest
	// of all) after --wait saw the failure already recorded.
	var lines []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		r = cliMust(t, s.url, 0, "events")
		lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) > 1 && strings.Contains(lines[1], "Failed") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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

	// get -l and --sort-by, on checkout (tag checkout, targetPort 8080,
	// failed) and vendor (no tags, 443, ready).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-l", "checkout"}, "service/checkout\n"},
		{[]string{"-l", "tag=checkout"}, "service/checkout\n"},
		{[]string{"-l", "checkout,payments"}, ""},
		{[]string{"--sort-by", ".targetPort"}, "service/vendor\nservice/checkout\n"},
		{[]string{"--sort-by", ".spec.targetPort"}, "service/vendor\nservice/checkout\n"},
		{[]string{"--sort-by", ".bridgePort"}, "service/checkout\nservice/vendor\n"},
		{[]string{"--sort-by", ".provisioningStatus"}, "service/checkout\nservice/vendor\n"},
	} {
		if r := cliMust(t, s.url, 0, append([]string{"get", "services", "-o", "name"}, c.args...)...); r.stdout != c.want {
			t.Errorf("get services %s:\n%s", strings.Join(c.args, " "), r)
		}
	}
	if r := cliMust(t, s.url, 0, "get", "agents", "--sort-by", ".createdAt", "-o", "name"); r.stdout != "agent/hub\nagent/fog-a\n" {
		t.Errorf("get agents --sort-by .createdAt:\n%s", r)
	}
	if r := cliMust(t, s.url, 0, "get", "services", "-l", "nope"); r.stdout != "No services.\n" {
		t.Errorf("get services -l nope:\n%s", r)
	}
	if r := cliMust(t, s.url, 1, "get", "services", "--sort-by", ".nope"); !strings.Contains(r.stderr, "--sort-by .nope: no object has that field") {
		t.Errorf("get services --sort-by .nope:\n%s", r)
	}
	if r := cliMust(t, s.url, 1, "get", "agents", "-l", "checkout"); !strings.Contains(r.stderr, "-l selects services (by tag) only") {
		t.Errorf("get agents -l:\n%s", r)
	}
}
