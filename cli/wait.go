package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"svcbridge/routerconfig"
)

// pollInterval is how often --wait reads the services it cannot
// long-poll; longPollWait is how long one long poll waits (the progress
// line is drawn again after each).
const (
	pollInterval = 200 * time.Millisecond
	longPollWait = time.Second
)

// maxLongPolls is how many services --wait long-polls at once, each on a
// connection of its own, so that each line comes as its reconcile
// commits. More than that are followed by one watch of the services (a
// file of hundreds would otherwise open hundreds of connections), or,
// where the server refuses the watch, read in turn every pollInterval,
// until no more are left.
const maxLongPolls = 8

// following is how --wait follows the services it still waits for.
type following int

const (
	// byReads: each read in turn, every pollInterval.
	byReads following = iota
	// byLongPolls: each long-polled on a connection of its own.
	byLongPolls
	// byWatch: one watch of the services, and a read of each that the
	// watch shows done, for its line.
	byWatch
)

// followBy decides how to follow rest: a few by long polls, more by a
// watch unless the server refused one (watchRefused). Long polls and the
// watch see what a service's reads see, so both follow ready and
// reconciled goals only: a rollout is the agents' reports (a service's
// long poll sees them only a second late, its watch not at all) and a
// deleted service's objects are on routers' documents.
func followBy(rest []*waitTarget, rollout, watchRefused bool) following {
	switch {
	case rollout || slices.ContainsFunc(rest, func(t *waitTarget) bool { return t.goal == untilGone }):
		return byReads
	case len(rest) <= maxLongPolls:
		return byLongPolls
	case watchRefused:
		return byReads
	}
	return byWatch
}

type waitGoal int

const (
	// untilReady: the latest generation is reconciled, and ready (failed
	// ends the wait with exit code 3).
	untilReady waitGoal = iota
	// untilReconciled: the reconcile asked for finished (the service's
	// observed reconcile request reached request), then as untilReady.
	untilReconciled
	// untilGone: the service is deleted and no router in routers holds
	// its listener or connector any more.
	untilGone
)

// waitTarget is one service --wait follows.
type waitTarget struct {
	name    string
	goal    waitGoal
	request int64    // untilReconciled: the request's number
	routers []string // untilGone: agents whose routers may hold its objects
	// unchanged: apply left the service as it was, and requested nothing;
	// its failure says how to retry it.
	unchanged bool

	// Written by poll, which may run in a goroutine of its own
	// (followAll): read them only between its polls.
	done    bool
	err     error
	final   string // the line printed when done
	state   string // the latest progress, for the progress line and a timeout
	lastErr error  // the latest poll error
	etag    string // the latest read's ETag, for a long poll

	// As the waiter last saw them between polls, for the progress line
	// and the printing in order while other targets are polled.
	seenDone  bool
	seenState string
}

// seen records t's outcome once its poll is over.
func (t *waitTarget) seen() { t.seenDone, t.seenState = t.done, t.state }

// waiter polls services until their goals are met.
type waiter struct {
	c        *Client
	out      io.Writer // final lines
	progress io.Writer // the updating progress line; nil: none
	width    int
	interval time.Duration
	// rollout: ready is not enough, the agents' routers must hold their
	// listeners; see rolledOut.
	rollout bool

	targets []*waitTarget
	printed int // targets whose line is printed (or that failed), in order
	start   time.Time
}

// wait follows targets until each is done, or timeout passes. It prints a
// line per target, in their order, as they finish, and returns the errors: *FailedError (3),
// *TimeoutError (4), or what the server answered.
func (w *waiter) wait(ctx context.Context, targets []*waitTarget, timeout time.Duration) error {
	if len(targets) == 0 {
		return nil
	}
	interval := w.interval
	if interval <= 0 {
		interval = pollInterval
	}
	w.targets, w.printed, w.start = targets, 0, time.Now()
	deadline := w.start.Add(timeout)
	watchRefused := false
	for {
		rest := undone(targets)
		if len(rest) == 0 {
			break
		}
		how := followBy(rest, w.rollout, watchRefused)
		if how == byLongPolls {
			w.followAll(ctx, rest, deadline, interval)
			break
		}
		if how == byWatch {
			// Until a few are left, or the deadline: then as they say.
			watchRefused = !w.watchAll(ctx, rest, deadline)
			if ctx.Err() != nil || !time.Now().Before(deadline) {
				break
			}
			continue
		}
		for _, t := range rest {
			w.poll(ctx, t, 0)
			t.seen()
		}
		if w.printDone(); w.printed == len(targets) {
			break
		}
		w.showProgress()
		if ctx.Err() != nil || time.Now().Add(interval).After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
	w.clearProgress()
	if err := ctx.Err(); err != nil {
		return err
	}
	// Those held back behind one that did not finish.
	for _, t := range targets[w.printed:] {
		if t.done && t.err == nil {
			fmt.Fprintln(w.out, t.final)
		}
	}
	var errs []error
	for _, t := range targets {
		switch {
		case t.done && t.err != nil:
			errs = append(errs, t.err)
		case !t.done:
			var ue *UnreachableError
			if errors.As(t.lastErr, &ue) {
				errs = append(errs, t.lastErr)
				continue
			}
			errs = append(errs, &TimeoutError{After: timeout, State: "service " + t.name + ": " + t.state})
		}
	}
	return join(errs)
}

// followAll polls each of rest in a goroutine of its own until it is done
// or deadline passes: a long poll once it was read, else a read every
// interval (a server before long polls answers no ETag; one that did not
// answer is tried again). Lines print as their services finish, in order.
func (w *waiter) followAll(ctx context.Context, rest []*waitTarget, deadline time.Time, interval time.Duration) {
	polled := make(chan *waitTarget, len(rest))
	// follow polls t, and reports whether it does: a long poll once t was
	// read and answered (not near the deadline), else a read after after,
	// unless that comes after the deadline.
	follow := func(t *waitTarget, after time.Duration) bool {
		wait := time.Duration(0)
		if t.etag != "" && t.lastErr == nil && time.Until(deadline) >= longPollWait {
			wait, after = longPollWait, 0
		}
		if after > 0 && !time.Now().Add(after).Before(deadline) {
			return false
		}
		go func() {
			if after > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(after):
				}
			}
			w.poll(ctx, t, wait)
			polled <- t
		}()
		return true
	}
	for _, t := range rest {
		follow(t, 0) // at once
	}
	for inFlight := len(rest); inFlight > 0; {
		t := <-polled
		inFlight--
		t.seen()
		w.printDone()
		if t.done || ctx.Err() != nil {
			continue
		}
		if follow(t, interval) {
			inFlight++
		}
		w.showProgress()
	}
}

// errFewLeft ends watchAll's watch once long polls can follow the rest.
var errFewLeft = errors.New("few enough left to long-poll")

// watchAll follows rest with one watch of the services until no more than
// maxLongPolls of them are left, or deadline passes. The watch's objects
// say how each goes; one that it shows done is read once, for its line
// (the list the watch streams leaves out a service's distribution, its
// agents). It reports false if the server refused the watch (an older
// server, the client's watches all open), to read in turn instead.
func (w *waiter) watchAll(ctx context.Context, rest []*waitTarget, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	byName := make(map[string]*waitTarget, len(rest))
	for _, t := range rest {
		byName[t.name] = t
	}
	left := len(rest)
	watched := map[*waitTarget]bool{} // in the watch's initial state, or since
	// saw updates t from what the watch showed of it: svc, or deleted.
	saw := func(t *waitTarget, svc Service, deleted bool) {
		watched[t] = true
		probe := *t // decided as a read would, but printed from one
		if !deleted {
			w.see(ctx, &probe, svc, nil)
		}
		if deleted || probe.done {
			w.poll(ctx, t, 0)
		} else {
			t.state = probe.state
		}
		if t.seen(); t.done {
			left--
		}
	}
	k := watchKinds["services"]
	err := w.c.Watch(ctx, k.path, k.key, func(e WatchEvent) error {
		if e.Type == "BOOKMARK" {
			// The initial state is whole: those not in it are gone.
			for _, t := range rest {
				if !watched[t] {
					saw(t, Service{}, true)
				}
			}
		} else if svc, err := decodeService(e.Object); err == nil {
			// Decoded once: the watch's initial state is every service.
			if t := byName[svc.Name]; t != nil && !t.done {
				saw(t, svc, e.Type == "DELETED")
			}
		}
		if w.printDone(); left <= maxLongPolls {
			return errFewLeft
		}
		w.showProgress()
		return nil
	})
	var ae *APIError
	var ee *ExitError
	var ue *UnreachableError
	return !errors.As(err, &ae) && !errors.As(err, &ee) && !errors.As(err, &ue)
}

// printDone prints the lines of the targets done, in order, up to the
// first not done.
func (w *waiter) printDone() {
	for ; w.printed < len(w.targets) && w.targets[w.printed].seenDone; w.printed++ {
		w.clearProgress()
		if t := w.targets[w.printed]; t.err == nil {
			fmt.Fprintln(w.out, t.final)
		}
	}
}

// undone are the targets not done.
func undone(targets []*waitTarget) []*waitTarget {
	var out []*waitTarget
	for _, t := range targets {
		if !t.done {
			out = append(out, t)
		}
	}
	return out
}

// poll reads a target once and updates it; with wait, once read, a long
// poll of it up to wait that leaves it as it was when it did not change.
func (w *waiter) poll(ctx context.Context, t *waitTarget, wait time.Duration) {
	t.lastErr = nil
	svc, etag, changed, err := w.c.AwaitService(ctx, t.name, t.etag, wait)
	if err == nil && !changed {
		return
	}
	t.etag = etag
	w.see(ctx, t, svc, err)
}

// see updates t from a read of its service: svc, or the read's err.
func (w *waiter) see(ctx context.Context, t *waitTarget, svc Service, err error) {
	switch {
	case NotFound(err) && t.goal == untilGone:
		w.pollRouters(ctx, t)
		return
	case NotFound(err):
		t.done, t.err = true, &ExitError{Code: ExitRejected, Err: fmt.Errorf("service %s was deleted while waiting", t.name)}
		return
	case err != nil:
		var ue *UnreachableError
		if errors.As(err, &ue) {
			// The server may be restarting: keep trying until the
			// deadline.
			t.lastErr, t.state = err, "no answer from the server"
			return
		}
		t.done, t.err = true, err
		return
	}
	switch t.goal {
	case untilGone:
		if svc.ProvisioningStatus == "deleting" {
			// The row is gone; the server still sees its objects on routers.
			t.state = "deleting: its objects are still on routers"
			return
		}
		// Created again under the same name: nothing left to wait for.
		t.done, t.final = true, fmt.Sprintf("service/%s exists again (created anew); not waiting for the old one", t.name)
		return
	case untilReconciled:
		if svc.ObservedReconcileRequest < t.request {
			t.state = "reconcile requested; waiting for it to finish (" + progressOf(svc) + ")"
			return
		}
	}
	t.state = progressOf(svc)
	if !svc.Settled() {
		return
	}
	switch svc.ProvisioningStatus {
	case "ready":
		if w.rollout {
			done, state, err := rolledOut(svc)
			if t.state = state; !done {
				t.done, t.err = err != nil, err
				return
			}
			t.done, t.final = true, "service/"+t.name+" rolled out"+readyDetail(svc)
			return
		}
		t.done, t.final = true, "service/"+t.name+" ready"+readyDetail(svc)
	case "failed":
		msg := svc.ErrorText()
		if t.unchanged {
			msg += " (apply left it unchanged and requested no reconcile: 'svcbridge reconcile " + t.name + " --wait' retries it)"
		}
		t.done, t.err = true, &FailedError{Service: t.name, Message: msg}
	}
}

// rolledOut reports whether a ready service has reached every agent: the
// router of each agent it selects holds its listener (as the agent's
// router side reported, or, without one, as the agent acknowledged), and no
// agent it no longer selects still holds one. A router that refused the
// listener or cannot serve it ends the wait (err), naming the agent and the
// router's reason; state names the agents still to go, and why.
func rolledOut(s Service) (done bool, state string, err error) {
	var refused, waiting []string
	for _, e := range s.Distribution {
		switch r := e.Rollout; {
		case !wanted(e.Wanted) && e.Listening:
			waiting = append(waiting, e.AgentName+" (still to drop its listener)")
		case !wanted(e.Wanted):
		case !e.Listening:
			waiting = append(waiting, e.AgentName+" (listener not written yet)")
		case r == routerconfig.RolloutFailed:
			refused = append(refused, e.AgentName+": "+e.RolloutReason)
		case !routerconfig.RolledOut(r):
			waiting = append(waiting, e.AgentName+" ("+rolloutText(r, e.RolloutReason, true)+")")
		}
	}
	if len(refused) > 0 {
		return false, "", &FailedError{Service: s.Name, Message: "its listener was refused by the router of " + strings.Join(refused, "; ")}
	}
	state = "ready, rolling out: " + summarize(s.Distribution).String()
	if len(waiting) > 0 {
		state += "; waiting for " + strings.Join(waiting, ", ")
	}
	return len(waiting) == 0, state, nil
}

// pollRouters checks that no router still holds the deleted service's
// objects.
func (w *waiter) pollRouters(ctx context.Context, t *waitTarget) {
	left := 0
	for _, agent := range t.routers {
		rc, err := w.c.AgentRouter(ctx, agent)
		if NotFound(err) {
			continue // no router (any more)
		}
		if err != nil {
			t.lastErr, t.state = err, "deleted; cannot read the router of "+agent+": "+err.Error()
			return
		}
		_, l := rc.Bridges.TCPListeners[t.name+"-listener"]
		_, c := rc.Bridges.TCPConnectors[t.name+"-connector"]
		if l || c {
			left++
		}
	}
	if left > 0 {
		t.state = "deleted; objects still on " + plural(left, "router", "routers")
		return
	}
	t.done, t.final = true, "service/"+t.name+" deleted and removed from every router"
}

// progressOf describes a service's provisioning: status, generations and
// agents.
func progressOf(s Service) string {
	var b strings.Builder
	if s.Settled() {
		b.WriteString(s.ProvisioningStatus)
	} else {
		fmt.Fprintf(&b, "reconciling generation %d (observed %d, %s)", s.Generation, s.ObservedGeneration, s.ProvisioningStatus)
	}
	n, m := s.Agents()
	fmt.Fprintf(&b, ", %d/%d agents listening", n, m)
	if e := s.ErrorText(); e != "" && s.ProvisioningStatus == "failed" {
		b.WriteString(": " + e)
	}
	// Why it waits (no worker polls), as describe says: a --wait that gives
	// up prints this line.
	if !s.Settled() && s.ProvisioningMessage != "" {
		b.WriteString(": " + s.ProvisioningMessage)
	}
	return b.String()
}

// readyDetail is what the ready line adds: bridge port and agents.
func readyDetail(s Service) string {
	parts := []string{fmt.Sprintf("bridgePort %d", s.BridgePort)}
	if ep := endpoint(s); ep != "" {
		parts = append(parts, "endpoint "+ep)
	}
	n, m := s.Agents()
	parts = append(parts, fmt.Sprintf("%d/%d agents listening", n, m))
	return " (" + strings.Join(parts, ", ") + ")"
}

func (w *waiter) showProgress() {
	if w.progress == nil {
		return
	}
	var parts []string
	for _, t := range w.targets {
		if !t.seenDone {
			parts = append(parts, t.name+": "+t.seenState)
		}
	}
	line := fmt.Sprintf("[%4.1fs] %s", time.Since(w.start).Seconds(), strings.Join(parts, " | "))
	if w.width > 1 && len([]rune(line)) > w.width-1 {
		line = string([]rune(line)[:w.width-2]) + "…"
	}
	fmt.Fprint(w.progress, "\r\033[K"+line)
}

func (w *waiter) clearProgress() {
	if w.progress != nil {
		fmt.Fprint(w.progress, "\r\033[K")
	}
}
