package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"svcbridge/routerconfig"
	"svcbridge/wire"
)

func describeCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	var all bool
	cmd := &cobra.Command{
		Use:   "describe service|agent NAME... | describe KIND/NAME...",
		Short: "Show a service or an agent in detail",
		Long: `Show a service in detail: its spec, status and provisioningError, bridgePort and
endpoint, the agents that listen for it (counted by state: acknowledged, written,
pending, being removed; then the first 20, or all with --all, with why and whether
they acknowledged the change), its Temporal workflow and a Web UI link to it. Or an agent: its
settings, its open bridge ports and the services it listens for.

LISTENING says whether the agent's router serves the service's port: "yes" once its
listener is written to the router's config (ROUTER: whether the router holds it yet),
"no (router refused)" when the router refused it, "no (service failed)" for every
listener of a failed service (its connector or hub listener is not in place).

The workflow's namespace and Web UI link are the server's (TEMPORAL_NAMESPACE and
TEMPORAL_UI_URL; dev links its own UI): none is shown when the server does not say.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge describe service checkout
  svcbridge get services -o name | xargs svcbridge describe
  svcbridge describe agent fog-a
  svcbridge describe svc checkout -o json`,
		Args:              needResource("describe"),
		ValidArgsFunction: completeResources(&c),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			_, refs, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(refs) == 0 {
				return &ExitError{Code: ExitOther, Err: errors.New("describe needs names: describe service checkout")}
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			d := describer{c: client, w: cmd.OutOrStdout(), format: out.format, all: all}
			var errs []error
			for i, ref := range refs {
				if i > 0 && out.format == "" {
					fmt.Fprintln(d.w)
				}
				var err error
				switch ref.kind {
				case "services":
					err = d.service(cmd.Context(), ref.name)
				case "agents":
					err = d.agent(cmd.Context(), ref.name)
				default:
					return &ExitError{Code: ExitOther, Err: errors.New("describe takes service or agent; see 'svcbridge get microservices'")}
				}
				var ue *UnreachableError
				if errors.As(err, &ue) {
					return err
				}
				if err != nil {
					errs = append(errs, err)
				}
			}
			return join(errs)
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "json", "yaml")
	cmd.Flags().BoolVar(&all, "all", false, fmt.Sprintf("list every agent of a service's distribution (default: the first %d, after the counts by state)", describeAgents))
	return cmd
}

type describer struct {
	c      *Client
	w      io.Writer
	format string
	all    bool // every agent of a distribution, not the first describeAgents
}

// describeAgents is how many agents of a distribution describe lists
// without --all: a service on 1,000 agents is summed up, not printed.
const describeAgents = 20

// distributionCounts sums a distribution up by state.
type distributionCounts struct {
	applied  int // listening, and the router holds it (its router side, or the agent, said so)
	failed   int // listening, and the router refused it or cannot serve it
	written  int // listening, not applied yet
	pending  int // wanted, not listening yet
	removing int // listening, no longer wanted
}

func summarize(entries []DistributionEntry) distributionCounts {
	var c distributionCounts
	for _, e := range entries {
		switch {
		case e.Listening && !wanted(e.Wanted):
			c.removing++
		case !e.Listening:
			c.pending++
		case e.Rollout == routerconfig.RolloutFailed:
			c.failed++
		case routerconfig.RolledOut(e.Rollout):
			c.applied++
		default:
			c.written++
		}
	}
	return c
}

func (c distributionCounts) String() string {
	return fmt.Sprintf("%d applied, %d written (not applied yet), %d failed on their router, %d pending, %d being removed",
		c.applied, c.written, c.failed, c.pending, c.removing)
}

// wanted reads a Wanted flag, which the server always sends (nil, in an
// entry made by hand, counts as wanted).
func wanted(w *bool) bool { return w == nil || *w }

// reasonText shows why an agent listens for a service, or should: the
// reason, marked pending until its listener is written, or that the agent
// is no longer selected.
func reasonText(reason string, w *bool, listening bool) string {
	switch {
	case !wanted(w):
		return "(no longer selected; being removed)"
	case !listening:
		return reason + " (pending)"
	}
	return reason
}

// listeningText is the LISTENING column: whether the agent's router
// serves the service's port. A listener written to its router config is
// not served when the service failed (its connector or hub listener is
// not in place: the port carries nothing) or when the router refused it;
// the column says which, and never "yes" for either.
func listeningText(listening bool, rollout string, serviceFailed bool) string {
	switch {
	case !listening:
		return "no"
	case serviceFailed:
		return "no (service failed)"
	case rollout == routerconfig.RolloutFailed:
		return "no (router refused)"
	}
	return "yes"
}

// rolloutText shows how far a listener has got on its router, with why it
// failed or waits: "applied", "failed: Address already in use", "pending:
// router unreachable: ...", "-" where the agent does not listen.
func rolloutText(state, reason string, listening bool) string {
	switch {
	case !listening:
		return "-"
	case reason != "":
		return state + ": " + reason
	default:
		return state
	}
}

// field prints one "Label:  value" line.
func (d describer) field(label, value string) {
	if value == "" {
		value = "<none>"
	}
	fmt.Fprintf(d.w, "%-17s %s\n", label+":", value)
}

func (d describer) service(ctx context.Context, name string) error {
	s, err := d.c.GetService(ctx, name)
	if err != nil {
		return err
	}
	if d.format != "" {
		return printRaw(d.w, d.format, s.Raw)
	}
	inv, _ := loadInventory(ctx, d.c, true)
	now := time.Now()
	d.field("Name", s.Name)
	d.field("Type", s.Type)
	d.field("Backend", inv.backendLong(s))
	d.field("Tags", strings.Join(s.Tags, ", "))
	d.field("Default bridge", s.DefaultBridgeName)
	d.field("Bridge port", fmt.Sprint(s.BridgePort))
	if s.ServicePort != nil {
		d.field("Service port", fmt.Sprint(*s.ServicePort))
	}
	if s.K8sType != nil {
		d.field("Kubernetes type", *s.K8sType)
	}
	if s.ServiceEndpoint == nil || *s.ServiceEndpoint == "" {
		d.field("Endpoint", "<none>")
	} else {
		d.field("Endpoint", servedText(s, *s.ServiceEndpoint))
	}
	if s.K8sType != nil {
		d.field("Allowed from", allowedFrom(s))
	}
	if opts := s.KubernetesOptions(); len(opts) > 0 {
		d.field("Kubernetes", fmt.Sprintf("%d options (spec.kubernetes)", len(opts)))
		t := newIndentedTable(d.w, "OPTION", "VALUE")
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			t.row(k, compactJSON(opts[k]))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	st := s.ProvisioningStatus
	if !s.Settled() {
		st += fmt.Sprintf(" (reconciling generation %d; the status is of generation %d)", s.Generation, s.ObservedGeneration)
	}
	d.field("Status", st)
	d.field("Error", s.ErrorText())
	if s.ProvisioningStatus == "failed" {
		if err := d.failing(ctx, s.Name, now); err != nil {
			return err
		}
	}
	if s.ProvisioningMessage != "" {
		d.field("Note", s.ProvisioningMessage)
	}
	d.field("Generation", fmt.Sprintf("%d (observed %d)", s.Generation, s.ObservedGeneration))
	d.field("Created", moment(s.CreatedAt, now))
	d.field("Updated", moment(s.UpdatedAt, now))
	workflow := s.WorkflowID
	if s.WorkflowNamespace != "" {
		workflow += " (namespace " + s.WorkflowNamespace + ")"
	}
	d.field("Workflow", workflow)
	if s.WorkflowURL != "" {
		d.field("Web UI", s.WorkflowURL)
	}
	if err := d.distribution(s, now); err != nil {
		return err
	}
	return d.events(ctx, s.Name, now)
}

// distribution prints which agents listen for s: counted by state, then
// the first describeAgents (all with --all).
func (d describer) distribution(s Service, now time.Time) error {
	n, m := s.Agents()
	dist := fmt.Sprintf("%d/%d agents listening", n, m)
	if !served(s) && n > 0 {
		dist += "; no traffic until the service is ready again (it failed)"
	}
	d.field("Distribution", dist)
	if len(s.Distribution) == 0 {
		return nil
	}
	d.field("By state", summarize(s.Distribution).String())
	shown := s.Distribution
	if !d.all && len(shown) > describeAgents {
		shown = shown[:describeAgents]
	}
	t := newIndentedTable(d.w, "AGENT", "REASON", "LISTENING", "ROUTER", "ACKNOWLEDGED", "WRITTEN")
	for _, e := range shown {
		t.row(e.AgentName, reasonText(e.Reason, e.Wanted, e.Listening), listeningText(e.Listening, e.Rollout, !served(s)), rolloutText(e.Rollout, e.RolloutReason, e.Listening),
			ago(e.AcknowledgedAt, now, "no"), ago(e.WrittenAt, now, "-"))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if more := len(s.Distribution) - len(shown); more > 0 {
		fmt.Fprintf(d.w, "  ... and %d more agents (--all lists them, -o yaml gives every entry)\n", more)
	}
	return nil
}

// failing prints since when a failed service's passes have failed and how
// many, from its failure events.
func (d describer) failing(ctx context.Context, name string, now time.Time) error {
	events, err := d.c.LastEvents(ctx, name, streakEvents)
	if err != nil {
		return err
	}
	f := failingStreak(events, len(events) == streakEvents)
	if f.attempts == 0 {
		return nil
	}
	since := "since"
	if f.before {
		since = "since before"
	}
	d.field("Failing", fmt.Sprintf("%s %s, %s", since, moment(f.since, now),
		plural(int(f.attempts), "failed attempt", "failed attempts")))
	return nil
}

// streakEvents is how many events describe reads for a failure streak:
// all the server keeps of a service.
const streakEvents = 50

// streak is how long a service has failed: since the first failure after
// its last ready (before, when the events read end first) and how many
// passes failed.
type streak struct {
	since    wire.Time
	attempts int64
	before   bool
}

// failingStreak sums the failure events (newest first) since the service
// was last ready, created or deleted; a reconcile request or an update
// does not end a streak, only a pass that succeeds does. truncated says
// that older events exist beyond those given.
func failingStreak(events []Event, truncated bool) streak {
	var f streak
	for _, e := range events {
		switch e.Reason {
		case "Failed":
			f.since, f.attempts = e.FirstTimestamp, f.attempts+max(e.Count, 1)
		case "Ready", "Created", "Deleted":
			return f
		}
	}
	f.before = truncated && f.attempts > 0
	return f
}

// compactJSON shows an option's value: a string bare, anything else as
// compact JSON.
func compactJSON(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ago is "5s ago", or none when t is nil.
func ago(t *wire.Time, now time.Time, none string) string {
	if t == nil {
		return none
	}
	return age(*t, now) + " ago"
}

// indentedTable is a table whose lines start with two spaces; flush
// writes it.
type indentedTable struct {
	*table
	buf *bytes.Buffer
	w   io.Writer
}

func newIndentedTable(w io.Writer, header ...string) indentedTable {
	buf := &bytes.Buffer{}
	return indentedTable{table: newTable(buf, header...), buf: buf, w: w}
}

func (t indentedTable) flush() error {
	if err := t.table.flush(); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(t.buf.String(), "\n") {
		if l != "" {
			if _, err := io.WriteString(t.w, "  "+l); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d describer) agent(ctx context.Context, name string) error {
	a, err := d.c.GetAgent(ctx, name)
	if err != nil {
		return err
	}
	if d.format != "" {
		return printRaw(d.w, d.format, a.Raw)
	}
	now := time.Now()
	d.field("Name", a.Name)
	d.field("UUID", a.UUID)
	d.field("Router mode", a.RouterMode)
	d.field("Host", a.Host)
	d.field("Default router", yesNo(a.DefaultRouter))
	d.field("Tags", strings.Join(a.Tags, ", "))
	d.field("Upstream routers", strings.Join(a.UpstreamRouterNames, ", "))
	d.field("Created", moment(a.CreatedAt, now))
	d.field("Router side", routerSide(a.Router, now))
	if r := a.Router; r != nil {
		if r.Error != "" {
			d.field("Router error", r.Error)
		}
		for _, f := range r.Failed {
			d.field("Router refused", f.Type+"/"+f.Name+": "+f.Reason)
		}
	}
	if a.RouterMode == "none" {
		d.field("Open ports", "none (routerMode none: no router)")
		return nil
	}
	rc, err := d.c.AgentRouter(ctx, a.UUID)
	switch {
	case NotFound(err):
		d.field("Open ports", "none (no router config yet)")
	case err != nil:
		return err
	default:
		d.field("Open ports", portRanges(openPorts(rc)))
	}
	svcs, err := d.c.AgentServices(ctx, a.UUID)
	if err != nil {
		return err
	}
	d.field("Services", plural(len(svcs), "service", "services"))
	if len(svcs) == 0 {
		return nil
	}
	failed, err := d.failedServices(ctx)
	if err != nil {
		return err
	}
	t := newIndentedTable(d.w, "SERVICE", "BRIDGE-PORT", "REASON", "LISTENING", "ROUTER", "ACKNOWLEDGED")
	for _, s := range svcs {
		port := "-"
		if s.BridgePort != nil {
			port = fmt.Sprint(*s.BridgePort)
		}
		t.row(s.Service, port, reasonText(s.Reason, s.Wanted, s.Listening), listeningText(s.Listening, s.Rollout, failed[s.Service]),
			rolloutText(s.Rollout, s.RolloutReason, s.Listening), ago(s.AcknowledgedAt, now, "no"))
	}
	return t.flush()
}

// failedServices names the services whose provisioning failed: an
// agent's services (GET /agents/{agent}/services) do not say it, the
// services' list does.
func (d describer) failedServices(ctx context.Context) (map[string]bool, error) {
	all, err := d.c.ListServices(ctx)
	if err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	for _, s := range all {
		failed[s.Name] = !served(s)
	}
	return failed, nil
}

// routerSide says what an agent's router side last reported: whether its
// router holds the agent's latest change, and when it said so.
func routerSide(r *wire.AgentRouter, now time.Time) string {
	if r == nil {
		return "none reported (no svcbridge router-sync beside this agent's router)"
	}
	held := fmt.Sprintf("%s, %s", plural(r.TCPListeners, "listener", "listeners"), plural(r.TCPConnectors, "connector", "connectors"))
	state := "in step: the router holds the latest change (" + held + ")"
	switch {
	case r.Error != "":
		state = "behind: " + r.Error
	case len(r.Failed) > 0:
		state = fmt.Sprintf("the router refused %s (%s held)", plural(len(r.Failed), "bridge", "bridges"), held)
	case r.Lagging:
		state = "behind: the latest change is not applied yet (" + held + ")"
	}
	return state + "; reported " + age(r.ReportedAt, now) + " ago"
}
