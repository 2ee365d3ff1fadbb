package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/wire"
)

// A service waited for alone is long-polled once read: the wait ends as
// its pass commits, however long the waiter sleeps between the reads of
// several services.
func TestCLIWaitLongPollsALoneService(t *testing.T) {
	f := newFleet(t)
	f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc), "--wait")
	ctx := context.Background()
	// checkout's spec changes in the store alone: it is pending, and no
	// reconcile runs until the test runs one.
	err := f.acts.Store.InTx(ctx, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, "checkout")
		if err != nil {
			return err
		}
		svc.TargetPort++
		return tx.UpdateService(ctx, &svc)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.beside(func() {
		time.Sleep(300 * time.Millisecond)
		f.ServiceChanged(ctx, "checkout")
	})
	var out bytes.Buffer
	w := &waiter{c: &Client{Server: f.URL, Token: fleetToken}, out: &out, interval: time.Hour}
	if err := w.wait(ctx, []*waitTarget{{name: "checkout", goal: untilReady}}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "service/checkout ready") {
		t.Errorf("the wait printed %q", out.String())
	}
}

// Several services waited for are long-polled at once, each on its own
// connection: every line comes as its pass commits, however long the
// waiter sleeps between reads, and the lines come in the services' order
// though their passes run in the reverse one.
func TestCLIWaitLongPollsEachService(t *testing.T) {
	waitForPassesInReverse(t, newFleet(t), 3)
}

// More services than it long-polls, --wait follows with one watch of the
// services: every line comes as its pass commits, in the services' order,
// though the waiter would sleep an hour between rounds of reads, and it
// reads each service a few times, not once a round.
func TestCLIWaitWatchesManyServices(t *testing.T) {
	f := newFleet(t)
	var mu sync.Mutex
	watches, reads := 0, 0
	f.wrap(func(w http.ResponseWriter, r *http.Request, api http.Handler) {
		mu.Lock()
		switch {
		case r.Method != http.MethodGet:
		case r.URL.Path == "/api/v3/services" && r.URL.Query().Get("watch") == "true":
			watches++
		case strings.HasPrefix(r.URL.Path, "/api/v3/services/"):
			reads++
		}
		mu.Unlock()
		api.ServeHTTP(w, r)
	})
	n := 3 * maxLongPolls
	waitForPassesInReverse(t, f, n)
	mu.Lock()
	defer mu.Unlock()
	// apply's --wait and the test's: a watch each, and each service read
	// when done, then long-polled among the last few.
	if watches != 2 || reads > 2*3*n {
		t.Errorf("the waits opened %d watches and read services %d times, for %d services waited for twice", watches, reads, n)
	}
}

// followBy long-polls a few services, watches more, and reads in turn
// what neither sees: rollouts, removals from routers, or all when the
// server refused the watch.
func TestFollowBy(t *testing.T) {
	ready := func(n int) []*waitTarget {
		var out []*waitTarget
		for range n {
			out = append(out, &waitTarget{goal: untilReady})
		}
		return out
	}
	gone := append(ready(2), &waitTarget{goal: untilGone})
	for _, c := range []struct {
		name          string
		rest          []*waitTarget
		rollout, refd bool
		want          following
	}{
		{"one ready", ready(1), false, false, byLongPolls},
		{"as many as long polls", ready(maxLongPolls), false, false, byLongPolls},
		{"one more", ready(maxLongPolls + 1), false, false, byWatch},
		{"one more, the watch refused", ready(maxLongPolls + 1), false, true, byReads},
		{"a few, the watch refused", ready(2), false, true, byLongPolls},
		{"a rollout", ready(1), true, false, byReads},
		{"many, a rollout", ready(maxLongPolls + 1), true, false, byReads},
		{"one gone among them", gone, false, false, byReads},
	} {
		if got := followBy(c.rest, c.rollout, c.refd); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// waitForPassesInReverse applies n services and waits for them; then
// changes each in the store alone, reconciles them in the reverse order,
// and checks that a waiter that would sleep an hour between reads prints
// each ready, in their order.
func waitForPassesInReverse(t *testing.T, f *fleet, n int) {
	t.Helper()
	doc := fleetDoc
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("vendor-%02d", i))
		doc += fmt.Sprintf("---\nkind: Service\nmetadata: {name: %s}\nspec: {type: external, resource: 203.0.113.%d, targetPort: 443}\n", names[i], i+1)
	}
	f.must(0, "apply", "-f", f.file("fleet.yaml", doc), "--wait")
	ctx := context.Background()
	// Their specs change in the store alone: pending, and no reconcile
	// runs until the test runs one.
	err := f.acts.Store.InTx(ctx, func(tx *store.Tx) error {
		for _, name := range names {
			svc, err := tx.GetService(ctx, name)
			if err != nil {
				return err
			}
			svc.TargetPort++
			if err := tx.UpdateService(ctx, &svc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.beside(func() {
		for _, name := range slices.Backward(names) {
			time.Sleep(time.Second / time.Duration(n))
			f.ServiceChanged(ctx, name)
		}
	})
	var out bytes.Buffer
	w := &waiter{c: &Client{Server: f.URL, Token: fleetToken}, out: &out, interval: time.Hour}
	var targets []*waitTarget
	for _, name := range names {
		targets = append(targets, &waitTarget{name: name, goal: untilReady})
	}
	if err := w.wait(ctx, targets, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(names) {
		t.Fatalf("the wait printed %q", out.String())
	}
	for i, name := range names {
		if !strings.HasPrefix(lines[i], "service/"+name+" ready (bridgePort ") || !strings.HasSuffix(lines[i], "1/1 agents listening)") {
			t.Errorf("line %d: %q, want %s ready on its one agent", i+1, lines[i], name)
		}
	}
}

// apply --wait writes nothing for an unchanged service: it requests no
// reconcile of it, and waits on the service as it is, through the
// reconcile the server itself requested when an agent or microservice it
// depends on changed.
func TestCLIApplyWaitRequestsNoReconcileOfAnUnchangedService(t *testing.T) {
	f := newFleet(t)
	fleet := f.file("fleet.yaml", fleetDoc)
	f.must(0, "apply", "-f", fleet, "--wait")
	c := &Client{Server: f.URL, Token: fleetToken}
	// The reconciles requested of checkout, by the CLI or the server.
	requests := func() int64 {
		t.Helper()
		s, err := c.GetService(context.Background(), "checkout")
		if err != nil {
			t.Fatal(err)
		}
		return s.ReconcileRequest
	}

	// fog-a loses its router: the server requests checkout's reconcile,
	// which fails.
	f.must(0, "apply", "-f", f.file("none.yaml", "kind: AgentConfig\nmetadata: {name: fog-a, tags: [\"service.iofog.org/tag: checkout\"]}\nspec: {routerMode: none}\n"))
	before := requests()
	// checkout alone, unchanged: its failure, at once, and how to retry.
	svc := f.file("checkout.yaml", fleetDoc[strings.Index(fleetDoc, "kind: Service"):])
	out, stderr := f.must(ExitFailed, "apply", "-f", svc, "--wait", "--timeout", "10s")
	if out != "service/checkout unchanged\n" || stderr != "error: service checkout failed: Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent "+
		"(apply left it unchanged and requested no reconcile: 'svcbridge reconcile checkout --wait' retries it)\n" {
		t.Errorf("apply --wait of the unchanged failed checkout:\n%s%s", out, stderr)
	}
	if after := requests(); after != before {
		t.Errorf("apply --wait of the unchanged checkout requested a reconcile: %d requests, were %d", after, before)
	}

	// The whole file: fog-a gets its router back, and the server requests
	// checkout's reconcile with that change; apply waits for it.
	out, _ = f.must(0, "apply", "-f", fleet, "--wait", "--timeout", "10s")
	if !strings.Contains(out, "agent/fog-a configured\n") || !strings.Contains(out, "service/checkout unchanged\n") ||
		!strings.Contains(out, "service/checkout ready (bridgePort 10024, endpoint hub.example.com:10024, 2/2 agents listening)\n") {
		t.Errorf("apply --wait restoring fog-a:\n%s", out)
	}
	if after := requests(); after != before+1 {
		t.Errorf("apply --wait after an agent change: %d reconcile requests, want the server's one after %d", after, before)
	}
}

// --wait=rollout names the agents whose routers do not hold the listener
// yet when it gives up, and the router that refused it.
func TestCLIRolloutNamesTheAgentsItWaitsFor(t *testing.T) {
	f := newFleet(t)
	out, _ := f.must(0, "apply", "-f", f.file("fleet.yaml", fleetDoc))
	tokens := agentTokens(t, out)
	fleet := f.file("fleet.yaml", fleetDoc)
	_, stderr := f.must(ExitTimeout, "apply", "-f", fleet, "--wait=rollout", "--timeout", "300ms")
	if stderr != "error: timed out after 300ms; service checkout: ready, rolling out: 0 applied, 2 written (not applied yet), 0 failed on their router, "+
		"0 pending, 0 being removed; waiting for fog-a (pending), hub (pending)\n" {
		t.Errorf("apply --wait=rollout, no router holding the listener:\n%s", stderr)
	}
	f.report(tokens["hub"])
	if _, stderr = f.must(ExitTimeout, "apply", "-f", fleet, "--wait=rollout", "--timeout", "300ms"); !strings.HasSuffix(stderr, "; waiting for fog-a (pending)\n") {
		t.Errorf("apply --wait=rollout, the hub's router holding the listener:\n%s", stderr)
	}
	f.report(tokens["fog-a"], wire.FailedBridge{Type: routerconfig.EntityTCPListener, Name: routerconfig.ListenerName("checkout"), Reason: "Address already in use"})
	if _, stderr = f.must(ExitFailed, "apply", "-f", fleet, "--wait=rollout", "--timeout", "10s"); stderr != "error: service checkout failed: its listener was refused by the router of fog-a: Address already in use\n" {
		t.Errorf("apply --wait=rollout, fog-a's router refusing the listener:\n%s", stderr)
	}
	f.report(tokens["fog-a"])
	if out, _ = f.must(0, "apply", "-f", fleet, "--wait=rollout", "--timeout", "10s"); !strings.HasSuffix(out, "service/checkout rolled out (bridgePort 10024, endpoint hub.example.com:10024, 2/2 agents listening)\n") {
		t.Errorf("apply --wait=rollout, every router holding the listener:\n%s", out)
	}
}
