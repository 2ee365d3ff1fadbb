// Package routersync is svcbridge's router side: a loop beside one skupper
// router that makes the router hold what svcbridge says it should. It
// learns the router's document from its source (an agent's router document
// from the pull API, or the Kubernetes hub's ConfigMap), reads what the
// router holds over AMQP management, plans the difference (PlanApply,
// pure), applies it, keeps the router's start-up file equal to what was
// applied, and reports what the router confirmed. It acts only on
// documents it was given: a control plane that is down or unreachable
// never removes anything from the router.
package routersync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"svcbridge/document"
	"svcbridge/routerconfig"
	"svcbridge/routermgmt"
	"svcbridge/wire"
)

// Desired is what a router should hold, as its source says.
type Desired struct {
	// Version names the document (an ETag, a resourceVersion).
	Version string
	// Entities are all of the document's; Types those the sync applies
	// at run time (the rest only through the start-up file).
	Entities []routerconfig.Entity
	Types    []string
	// NoRouter: the agent has no router any more (routerMode none); the
	// router is to hold nothing of svcbridge's.
	NoRouter bool
	// Seq is the change sequence the document covers, acknowledged once
	// the router holds it; 0 when the source has none.
	Seq int64
}

// Report is what the sync tells its source of the router.
type Report = wire.RouterReport

// Source is where the sync learns what its router should hold.
type Source interface {
	// Wait returns the desired state once its version differs from
	// version ("" for the current one); it may block for a long poll.
	Wait(ctx context.Context, version string) (Desired, error)
	// Report tells the control plane what the router applied.
	Report(ctx context.Context, r Report) error
}

// Router is the router's management, as the sync uses it.
type Router interface {
	Query(ctx context.Context, typ string) ([]routerconfig.Entity, error)
	Create(ctx context.Context, e routerconfig.Entity) error
	Delete(ctx context.Context, typ, name string) error
	Done() <-chan struct{}
	Close() error
}

// Options configure a Sync.
type Options struct {
	Source Source
	// Dial connects to the router's management.
	Dial func(ctx context.Context) (Router, error)
	// ConfigFile is the router's start-up file, kept equal to what was
	// applied (less what the router refused), so that a restarted router
	// starts from the last applied state; "" when someone else owns it
	// (the Kubernetes hub's ConfigMap).
	ConfigFile string
	// Resync is how often the router is read again with nothing changed
	// (a hand edit, a bind that failed later).
	Resync time.Duration
	Log    *slog.Logger
}

// Sync is one router's loop.
type Sync struct {
	Options
	router   Router
	desired  *Desired
	previous map[string]bool // keys of the entities applied before
	sent     *Report         // the last report the source took
	pending  *Report         // a report not yet taken
	failures int             // applies in a row that left work undone
	checks   int             // looks still to take at new listeners
	// unreachable counts the applies in a row that could not reach the
	// router; lastError is the error last logged.
	unreachable int
	lastError   string
	// unserved are the listeners the router holds but cannot serve (their
	// socket failed), by key, with the router's reason.
	unserved map[string]string
}

// New makes a Sync; Run runs it.
func New(o Options) *Sync {
	if o.Resync == 0 {
		o.Resync = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Sync{Options: o, previous: map[string]bool{}, unserved: map[string]string{}}
}

// update is one answer of the source.
type update struct {
	d   Desired
	err error
}

// Run runs the loop until ctx ends.
func (s *Sync) Run(ctx context.Context) error {
	s.loadPrevious()
	updates := make(chan update)
	go s.watch(ctx, updates)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	// reportAgain sends a report the source did not take again, backing
	// off from 1 s to 30 s, without waiting for the next apply.
	reportAgain := time.NewTimer(time.Hour)
	reportAgain.Stop()
	reportWait := time.Second
	resync := time.NewTicker(s.Resync)
	defer resync.Stop()
	// retrying: this apply makes failed listeners again (the retry timer
	// fired for that: retryNext).
	retrying, retryNext := false, false
	defer func() {
		if s.router != nil {
			s.router.Close()
		}
	}()
	for {
		var routerDone <-chan struct{}
		if s.router != nil {
			routerDone = s.router.Done()
		}
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			if u.err != nil {
				continue // watch logs it and backs off
			}
			if s.desired == nil || s.desired.Version != u.d.Version {
				s.Log.Info("router document", "version", u.d.Version, "entities", len(u.d.Entities), "noRouter", u.d.NoRouter)
			}
			s.desired = &u.d
			s.writeFirstFile()
		case <-retry.C:
			retrying = retryNext
		case <-reportAgain.C:
			if !s.report(ctx) {
				reportWait = min(2*reportWait, maxWait)
				reportAgain.Reset(reportWait)
			}
			continue
		case <-resync.C:
		case <-routerDone:
			s.Log.Warn("lost the router's management connection; reconnecting")
			s.router.Close()
			s.router = nil
		}
		var next time.Duration
		next, retryNext = s.apply(ctx, retrying)
		retrying = false
		if next > 0 {
			retry.Reset(next)
		}
		if s.report(ctx) {
			reportAgain.Stop()
			reportWait = time.Second
		} else {
			reportAgain.Reset(reportWait)
		}
	}
}

// watch asks the source for each new document, backing off on errors:
// 1 s doubling to 30 s, each wait drawn within ±20 % so that a fleet does
// not come back at once when the control plane does.
func (s *Sync) watch(ctx context.Context, updates chan<- update) {
	version := ""
	wait := time.Second
	for ctx.Err() == nil {
		d, err := s.Source.Wait(ctx, version)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrUnauthorized) {
				wait = maxWait
			}
			jittered := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
			s.Log.Error("cannot read the router's document; the router keeps what it holds", "error", err, "retryIn", jittered.Round(time.Millisecond))
			select {
			case updates <- update{err: err}:
			case <-ctx.Done():
				return
			}
			select {
			case <-time.After(jittered):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, maxWait)
			continue
		}
		wait = time.Second
		version = d.Version
		select {
		case updates <- update{d: d}:
		case <-ctx.Done():
			return
		}
	}
}

// maxWait bounds the wait before asking an unreachable control plane
// again.
const maxWait = 30 * time.Second

// apply makes the router hold the desired document (making failed
// listeners again with retry), and returns when to apply again, and
// whether that is a retry (0: nothing to do until something changes or
// the resync).
func (s *Sync) apply(ctx context.Context, retry bool) (time.Duration, bool) {
	if s.desired == nil {
		return 0, false // never touch the router without a document
	}
	d := *s.desired
	report := Report{Version: d.Version, Failed: []wire.FailedBridge{}}
	created, err := s.applyOnce(ctx, d, retry, &report)
	if err != nil {
		report.Error = err.Error()
	}
	// Each new trouble once: a router down for an hour is not a line a
	// second.
	if report.Error != s.lastError {
		if err != nil {
			s.Log.Error("router not in step with its document", "error", err)
		} else if s.lastError != "" {
			s.Log.Info("router in step with its document again")
		}
		s.lastError = report.Error
	}
	s.pending = &report
	switch {
	case s.router == nil:
		// Unreachable: a router restarting is back within seconds; one
		// that stays down is asked every 5 s.
		s.unreachable++
		return min(time.Second<<min(s.unreachable-1, 3), 5*time.Second), false
	case err != nil || len(report.Failed) > 0:
		s.unreachable = 0
		// Refused or failed bridges: their retry backs off to a minute.
		s.failures++
		return min(time.Second<<min(s.failures, 6), time.Minute), true
	case created:
		// A new listener opens its port once its address is reachable
		// in the network: look again shortly for a port taken.
		s.failures, s.checks, s.unreachable = 0, 3, 0
		return time.Second, false
	case s.checks > 0:
		s.checks--
		return time.Second << (3 - s.checks), false
	default:
		s.failures, s.unreachable = 0, 0
		return 0, false
	}
}

// applyOnce is one apply: connect, read, plan, change, record; created
// says whether it made listeners.
func (s *Sync) applyOnce(ctx context.Context, d Desired, retry bool, report *Report) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.router == nil {
		r, err := s.Dial(ctx)
		if err != nil {
			return false, fmt.Errorf("router unreachable: %w", err)
		}
		s.router = r
		s.Log.Info("connected to the router's management")
	}
	desired := d.Entities
	if d.NoRouter {
		desired = nil
	}
	var current []routerconfig.Entity
	for _, typ := range append([]string{routerconfig.EntityRouter, routerconfig.EntityListener}, d.Types...) {
		es, err := s.router.Query(ctx, typ)
		if err != nil {
			return false, s.lost(fmt.Errorf("router unreachable: reading its %ss: %w", typ, err))
		}
		current = append(current, es...)
	}
	plan := PlanApply(desired, current, d.Types, s.previous, retry)
	for _, e := range plan.Deletes {
		if err := s.router.Delete(ctx, e.Type, e.Name); err != nil && !routermgmt.NotFound(err) {
			return false, s.lost(fmt.Errorf("deleting %s: %w", e.Key(), err))
		}
		s.Log.Info("deleted", "entity", e.Key())
	}
	// invalid are the entities the router refused: left out of the
	// start-up file, where they would stop the router at start.
	invalid := map[string]string{}
	made := 0
	for _, e := range plan.Creates {
		err := s.router.Create(ctx, e)
		switch {
		case routermgmt.Refused(err):
			invalid[e.Key()] = err.Error()
			s.Log.Error("the router refused an entity", "entity", e.Key(), "error", err)
		case err != nil:
			return false, s.lost(fmt.Errorf("creating %s: %w", e.Key(), err))
		default:
			made++
			created = created || e.Type == routerconfig.EntityTCPListener
			s.Log.Info("created", "entity", e.Key())
		}
	}
	// What the router says of its listeners: as read above unless the
	// plan changed them.
	var listeners []routerconfig.Entity
	if len(plan.Creates) == 0 && len(plan.Deletes) == 0 {
		for _, c := range current {
			if c.Type == routerconfig.EntityTCPListener {
				listeners = append(listeners, c)
			}
		}
	} else if listeners, err = s.router.Query(ctx, routerconfig.EntityTCPListener); err != nil {
		return false, s.lost(fmt.Errorf("router unreachable: %w", err))
	}
	s.observe(desired, listeners)
	s.previous = map[string]bool{}
	for _, e := range desired {
		if slices.Contains(d.Types, e.Type) {
			s.previous[e.Key()] = true
		}
	}
	if err := s.writeFile(d, invalid); err != nil {
		return false, err
	}
	failed := maps.Clone(invalid)
	maps.Copy(failed, s.unserved)
	for _, key := range slices.Sorted(maps.Keys(failed)) {
		typ, name, _ := strings.Cut(key, "/")
		report.Failed = append(report.Failed, wire.FailedBridge{Type: typ, Name: name, Reason: document.Printable(failed[key], routerconfig.MaxReportText)})
	}
	for _, e := range desired {
		if _, bad := failed[e.Key()]; bad {
			continue
		}
		switch e.Type {
		case routerconfig.EntityTCPListener:
			report.TCPListeners++
		case routerconfig.EntityTCPConnector:
			report.TCPConnectors++
		}
	}
	if d.Seq > 0 {
		seq := d.Seq
		report.LastUpdated = &seq
	}
	s.Log.Debug("applied", "version", d.Version, "created", made, "deleted", len(plan.Deletes), "failed", len(failed))
	if len(plan.Restart) > 0 && !d.NoRouter {
		return created, fmt.Errorf("restart the router to apply its start-up file %s: %s", s.ConfigFile, strings.Join(plan.Restart, "; "))
	}
	return created, nil
}

// observe takes what the router says of the listeners it holds: one whose
// socket failed (its port taken on the host) cannot serve until a retry
// makes it again and it is seen up; a listener down without a message
// waits for its address to be reachable, and keeps what was said of it
// (a retried one that failed is not taken for served before it is up).
func (s *Sync) observe(desired, held []routerconfig.Entity) {
	want := map[string]bool{}
	for _, e := range desired {
		want[e.Key()] = true
	}
	for key := range s.unserved {
		if !want[key] {
			delete(s.unserved, key)
		}
	}
	for _, h := range held {
		switch why, status := Failed(h), h.Attrs["operStatus"]; {
		case !want[h.Key()]:
		case why != "":
			s.unserved[h.Key()] = why
		case status == "up":
			delete(s.unserved, h.Key())
		}
	}
}

// lost closes a management connection that failed mid-apply, so the next
// apply starts on a new one; what was done is read again then.
func (s *Sync) lost(err error) error {
	if s.router != nil {
		s.router.Close()
		s.router = nil
	}
	return err
}

// report sends the last apply's report when it says something new: a new
// version or sequence, other failures, another error. It reports whether
// the source has the last report: one it did not take is sent again.
func (s *Sync) report(ctx context.Context) bool {
	r := s.pending
	if r == nil || (s.sent != nil && sameReport(*s.sent, *r)) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Source.Report(ctx, *r); err != nil {
		s.Log.Warn("cannot report to the control plane; will report again", "error", err)
		return false
	}
	s.sent = r
	return true
}

func sameReport(a, b Report) bool {
	seq := func(r Report) int64 {
		if r.LastUpdated == nil {
			return -1
		}
		return *r.LastUpdated
	}
	return a.Version == b.Version && seq(a) == seq(b) && a.Error == b.Error && slices.Equal(a.Failed, b.Failed) &&
		a.TCPListeners == b.TCPListeners && a.TCPConnectors == b.TCPConnectors
}

// loadPrevious reads what the start-up file holds: what the sync applied
// before it restarted, which it may remove when the document drops it.
func (s *Sync) loadPrevious() {
	for _, e := range s.fileEntities() {
		s.previous[e.Key()] = true
	}
}

func (s *Sync) fileEntities() []routerconfig.Entity {
	if s.ConfigFile == "" {
		return nil
	}
	b, err := os.ReadFile(s.ConfigFile)
	if err != nil {
		return nil
	}
	es, err := routerconfig.FileEntities(b)
	if err != nil {
		s.Log.Warn("the router's start-up file is not a router config", "file", s.ConfigFile, "error", err)
	}
	return es
}

// writeFirstFile writes the start-up file of a router that has none yet,
// so that it can start from the document.
func (s *Sync) writeFirstFile() {
	if s.ConfigFile == "" || s.desired.NoRouter {
		return
	}
	if _, err := os.Stat(s.ConfigFile); !errors.Is(err, os.ErrNotExist) {
		return
	}
	if err := s.writeFile(*s.desired, nil); err != nil {
		s.Log.Error("cannot write the router's start-up file", "error", err)
	}
}

// writeFile makes the start-up file the document d's entities less those
// the router refused; with no router, the file keeps the router's own
// entities and loses the bridges and links. It is replaced whole, so a
// router starting at any moment reads one or the other.
func (s *Sync) writeFile(d Desired, invalid map[string]string) error {
	if s.ConfigFile == "" {
		return nil
	}
	var es []routerconfig.Entity
	if d.NoRouter {
		es = slices.DeleteFunc(s.fileEntities(), func(e routerconfig.Entity) bool { return slices.Contains(AgentTypes, e.Type) })
	} else {
		es = slices.DeleteFunc(slices.Clone(d.Entities), func(e routerconfig.Entity) bool { _, bad := invalid[e.Key()]; return bad })
	}
	content := routerconfig.File(es)
	if old, err := os.ReadFile(s.ConfigFile); err == nil && string(old) == string(content) {
		return nil
	}
	dir := filepath.Dir(s.ConfigFile)
	tmp, err := os.CreateTemp(dir, ".skrouterd-*.json")
	if err != nil {
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.ConfigFile); err != nil {
		return fmt.Errorf("write the router's start-up file: %w", err)
	}
	return nil
}
