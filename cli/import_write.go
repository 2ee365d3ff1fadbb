package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"svcbridge/importer"
)

// importWriter applies a plan through svcbridge's API, one line per
// object. A dry run sends every write the real run would send with
// ?dryRun=true (Client.DryRun): svcbridge checks it as it checks the
// write, and answers, storing nothing; so the dry run reports the
// refusals the real run would get, with the server's reasons.
type importWriter struct {
	c      *Client
	out    io.Writer
	dryRun bool
	// creds, when set, receives the tokens of the agents created
	// (--credentials-dir) instead of the lines.
	creds credentialsDir
	// outcomes holds the objects svcbridge refused, so that what needs
	// one is not tried.
	outcomes importer.Outcomes
	n        importCounts
	errs     []error
}

// importCounts count the lines, for the summary.
type importCounts struct {
	created, unchanged, skipped, conflicts, refused, notImported, failed int
}

func (n importCounts) String() string {
	return fmt.Sprintf("%d unchanged, %d skipped, %d in conflict, %d refused, %d not imported, %d failed",
		n.unchanged, n.skipped, n.conflicts, n.refused, n.notImported, n.failed)
}

// complete reports whether every object is created, unchanged or skipped.
func (n importCounts) complete() bool {
	return n.conflicts+n.refused+n.notImported+n.failed == 0
}

func (w *importWriter) apply(ctx context.Context, p importer.Plan) error {
	for _, n := range p.Notes {
		fmt.Fprintln(w.out, "note:", n)
	}
	for _, s := range p.Agents {
		w.step(importer.KindAgent, s.Head, "", func() (string, error) {
			a, err := w.c.CreateAgent(ctx, agentFields(s.Object))
			if err != nil || w.dryRun { // a dry run's token was never stored
				return w.creds.planned(s.Name), err
			}
			shown, err := w.creds.save(s.Name, a.Token)
			if err != nil { // the agent is created: its token is shown instead
				w.n.failed++
				w.errs = append(w.errs, err)
			}
			return shown, nil
		}, func() error { return p.CheckAgent(s.Object) })
	}
	// Upstream routers of a cycle, once every agent exists (a dry run
	// checked them with the agents, CheckAgent).
	for _, s := range p.Agents {
		if s.Action != importer.Create || len(s.Object.Later) == 0 || w.dryRun {
			continue
		}
		if _, refused := w.outcomes.Why(importer.Ref{Kind: importer.KindAgent, Name: s.Name}); refused {
			continue
		}
		if err := w.c.PatchAgent(ctx, s.Object.UUID, map[string]any{"upstreamRouters": s.Object.UpstreamRouters}); err != nil {
			w.fail(importer.KindAgent, s.Name, fmt.Errorf("upstreamRouters: %w", err), isAnswer(err))
		}
	}
	for _, s := range p.Microservices {
		w.step(importer.KindMicroservice, s.Head, "", func() (string, error) {
			m := s.Object
			_, err := w.c.CreateMicroservice(ctx, map[string]any{"uuid": m.UUID, "application": m.Application, "name": m.Name,
				"agent": m.AgentUUID, "hostNetworkMode": m.HostNetworkMode})
			return "", err
		}, nil)
	}
	for _, s := range p.Services {
		detail := ""
		if s.Port != nil {
			detail = portDetail(*s.Port)
		}
		w.step(importer.KindService, s.Head, detail, func() (string, error) {
			_, err := w.c.CreateServiceOnPort(ctx, serviceFields(s.Object), s.Port.Port)
			return "", err
		}, func() error { return p.CheckService(s.Object) })
	}

	summary := fmt.Sprintf("%d created, %s", w.n.created, w.n)
	if w.dryRun {
		summary = fmt.Sprintf("dry run, nothing written: %d to create, %s", w.n.created, w.n)
	}
	fmt.Fprintln(w.out, summary)
	if w.n.complete() && len(w.errs) == 0 {
		return nil
	}
	code := ExitRejected
	for _, err := range w.errs {
		code = max(code, ExitCode(err))
	}
	return &ExitError{Code: code, Err: errors.New("import incomplete: " + summary)}
}

// step prints one object's line, creating it first (in a dry run: sending
// the create as a dry run); detail is added to its note. check applies svcbridge's rules to what a dry
// run of the object cannot check: its references to objects the import
// creates first (importer.Plan.CheckAgent, CheckService).
func (w *importWriter) step(kind string, h importer.Head, detail string, create func() (string, error), check func() error) {
	ref := importer.Ref{Kind: kind, Name: h.Name}
	parts := []string{detail, h.Note}
	if h.From != "" {
		parts = append(parts, "renamed from "+h.From)
	}
	detail = strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "; ")
	switch h.Action {
	case importer.Conflict:
		w.n.conflicts++
		w.line(kind, h.Name, "conflict", h.Reason)
		return
	case importer.Skip:
		w.n.skipped++
		if h.Reason == "" {
			w.line(kind, h.Name, "skipped (--skip "+ref.Flag()+")", "")
		} else {
			w.line(kind, h.Name, "skipped because "+h.Reason, "")
		}
		return
	case importer.Blocked:
		w.notImported(ref, h.Reason)
		return
	case importer.Unchanged:
		w.n.unchanged++
		w.line(kind, h.Name, "unchanged", detail)
		return
	}
	if why, _, blocked := w.outcomes.Blocker(h.Needs); blocked {
		w.notImported(ref, why)
		return
	}
	shown, err := create()
	refused := isAnswer(err)
	if w.dryRun && awaitsNeed(err, h.Needs) {
		err = nil
	}
	if err == nil && w.dryRun && len(h.Needs) > 0 && check != nil {
		err, refused = check(), true
	}
	if err != nil {
		w.fail(kind, h.Name, err, refused)
		return
	}
	w.n.created++
	what := "created"
	if w.dryRun {
		what = "create"
	}
	w.line(kind, h.Name, strings.TrimSpace(what+" "+shown), detail)
}

// awaitsNeed reports whether svcbridge refused a dry run only at its
// reference to an object the import creates first, which a dry run cannot
// see, nothing being written: the refusal quotes that object's uuid
// ("Invalid agent '<uuid>'", "Invalid upstream router '<uuid>': no such
// agent", "Invalid microservice UUID '<uuid>'", "Invalid ioFog UUID
// '<uuid>'", "Invalid router '<uuid>'"), or says that the default router,
// which the import creates, is not found. svcbridge checks an object's own
// fields before its references, so those passed; what it would check next
// the step's check does.
func awaitsNeed(err error, needs []importer.Need) bool {
	var e *APIError
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		return false
	}
	return slices.ContainsFunc(needs, func(n importer.Need) bool {
		return strings.Contains(e.Message, "'"+n.UUID+"'") || (n.DefaultRouter && strings.HasPrefix(e.Message, "Default router not found"))
	})
}

// isAnswer reports whether err is svcbridge's answer refusing a request.
func isAnswer(err error) bool {
	var e *APIError
	return errors.As(err, &e)
}

// fail prints a write svcbridge refused (by its answer, or by its rules
// in a dry run), or one that failed otherwise (no answer), and records
// that the object is not imported.
func (w *importWriter) fail(kind, name string, err error, refused bool) {
	ref := importer.Ref{Kind: kind, Name: name}
	what, why := "failed", ref.String()+" failed"
	if refused {
		what, why = "refused", ref.String()+" was refused"
		w.n.refused++
	} else {
		w.n.failed++
	}
	w.errs = append(w.errs, err)
	w.outcomes.NotImported(ref, why, false)
	w.line(kind, name, what, err.Error())
}

// notImported prints an object that needs one that is not imported.
func (w *importWriter) notImported(ref importer.Ref, why string) {
	w.n.notImported++
	w.outcomes.NotImported(ref, why, false)
	w.line(ref.Kind, ref.Name, "not imported because "+why, "")
}

func (w *importWriter) line(kind, name, what, detail string) {
	if detail != "" {
		what += ", " + detail
	}
	fmt.Fprintf(w.out, "%s/%s: %s\n", kind, name, what)
}

// portDetail says which bridge port a service has, and why it moved.
func portDetail(p importer.Port) string {
	if !p.Moved() {
		return fmt.Sprintf("bridgePort %d kept", p.Port)
	}
	return fmt.Sprintf("bridgePort %d -> %d (%s)", p.Source, p.Port, p.Reason)
}

func agentFields(a importer.Agent) map[string]any {
	var ups []string
	for _, u := range a.UpstreamRouters {
		if !slices.Contains(a.Later, u) {
			ups = append(ups, u)
		}
	}
	f := map[string]any{"uuid": a.UUID, "name": a.Name, "routerMode": a.RouterMode, "tags": a.Tags,
		"upstreamRouters": append([]string{}, ups...), "defaultRouter": a.DefaultRouter}
	if a.Host != "" {
		f["host"] = a.Host
	}
	return f
}

func serviceFields(s importer.Service) map[string]any {
	f := map[string]any{"name": s.Name, "type": s.Type, "resource": s.Resource, "targetPort": s.TargetPort,
		"defaultBridge": s.DefaultBridge, "tags": s.Tags}
	if s.ServicePort != nil {
		f["servicePort"] = *s.ServicePort
	}
	if s.K8sType != nil {
		f["k8sType"] = *s.K8sType
	}
	return f
}
