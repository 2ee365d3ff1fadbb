package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// resource kinds the get, describe and delete commands take, with their
// aliases.
var resourceAliases = map[string]string{
	"service": "services", "services": "services", "svc": "services",
	"agent": "agents", "agents": "agents",
	"microservice": "microservices", "microservices": "microservices", "ms": "microservices", "msvc": "microservices",
}

// needResource is get's and describe's argument check: without one,
// kubectl's message naming the types, not cobra's "requires at least 1
// arg(s)".
func needResource(verb string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("you must specify the type of resource to %s: services (svc), agents (agent) or microservices (ms), e.g. 'svcbridge %s services'", verb, verb)
		}
		return nil
	}
}

func resourceKind(arg string) (string, error) {
	if k, ok := resourceAliases[strings.ToLower(arg)]; ok {
		return k, nil
	}
	return "", &ExitError{Code: ExitOther, Err: fmt.Errorf("unknown resource %q: want services, agents or microservices", arg)}
}

// completeResources completes the first argument with the kinds, and the
// next ones with names from the server.
func completeResources(c *conn) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []string{"services", "agents", "microservices"}, cobra.ShellCompDirectiveNoFileComp
		}
		kind, err := resourceKind(args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeNames(cmd, c, kind), cobra.ShellCompDirectiveNoFileComp
	}
}

func completeNames(cmd *cobra.Command, c *conn, kind string) []string {
	client, err := c.client(cmd)
	if err != nil {
		return nil
	}
	client.HTTP = &http.Client{Timeout: 2 * time.Second}
	ctx := context.Background()
	var names []string
	switch kind {
	case "services":
		svcs, _ := client.ListServices(ctx)
		for _, s := range svcs {
			names = append(names, s.Name)
		}
	case "agents":
		agents, _ := client.ListAgents(ctx)
		for _, a := range agents {
			names = append(names, a.Name)
		}
	case "microservices":
		ms, _ := client.ListMicroservices(ctx)
		for _, m := range ms {
			names = append(names, m.Application+"/"+m.Name)
		}
	}
	return names
}

func getCmd(o Options) *cobra.Command {
	var c conn
	var out outputFlag
	var watch bool
	var selector, sortBy string
	var noHeaders bool
	cmd := &cobra.Command{
		Use:   "get services|agents|microservices[,KIND...] [NAME...] | get KIND/NAME...",
		Short: "List services, agents or microservices",
		Long: `List services, agents or microservices (aliases: svc, agent, ms), or the named ones
(also as kind/name, as -o name prints them: get service/checkout). Several kinds,
comma-separated, list each in turn as kubectl does: get svc,agents prints the
services' table, then the agents' (names as kind/name); -o json|yaml|name|jsonpath
and custom-columns print the objects of every kind together.

Tables are for people. -o json and -o yaml print the documents apply reads (kind,
metadata, spec, and what the server sets under status, which apply ignores): the
document with one name, else a kind: List of them; 'svcbridge apply -f' takes
either back unchanged. -o name prints kind/name lines, which every verb taking
names accepts. -o wide adds columns.

-o jsonpath=TEMPLATE and -o custom-columns=HEADER:PATH,... are kubectl's, on the
objects as the API answers them (the fields of -o json's documents without their
metadata/spec/status levels: .name, .bridgePort, .provisioningStatus; a service
asked for by name has .distribution[*].agentName too): a list is a kind: List of
them, the one object asked for by name is itself. -o jsonpath='{.items[*].name}' prints the names;
-o jsonpath='{range .items[*]}{.name}{"\t"}{.bridgePort}{"\n"}{end}' a line
each. A custom column is the values of its path joined by commas, <none> where
there is none.

With --watch (-w), get prints the objects, then each change as the server reports
it (ADDED, MODIFIED, DELETED in an EVENT column; -o json: one {"type", "object"}
line per change, the object as -o json prints it; -o jsonpath: the template over
each changed object), until interrupted. A dropped connection is opened again
and nothing is missed or printed twice. It follows one kind.

-l/--selector selects services by tag, as kubectl's by label: -l checkout or
-l tag=checkout; -l checkout,payments selects those with both. --sort-by orders
the list by a field of the object as the API answers it (.name, .bridgePort,
.provisioningStatus, .createdAt; .spec.targetPort and {.metadata.name} as kubectl
writes them work too); objects without the field come first. Both apply to
every -o format, before printing. With --watch, -l selects the changes too (a
service that stops matching is DELETED, one that starts ADDED) and --sort-by
orders the initial list; changes follow in the order they happen.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge get services
  svcbridge get svc checkout -o yaml > checkout.yaml   # apply -f takes it back
  svcbridge get services -o name | xargs svcbridge describe
  svcbridge get agents -o wide
  svcbridge get svc,agents
  svcbridge get microservices -o json
  svcbridge get services -o jsonpath='{.items[*].bridgePort}'
  svcbridge get services -o custom-columns=NAME:.name,PORT:.bridgePort,STATUS:.provisioningStatus
  svcbridge get svc checkout -o custom-columns=NAME:.name,AGENTS:.distribution[*].agentName
  svcbridge get services -w
  svcbridge get services -l tag=checkout -o name | xargs svcbridge reconcile
  svcbridge get services --sort-by .bridgePort`,
		Args:              needResource("get"),
		ValidArgsFunction: completeResources(&c),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			tmpl, err := out.template()
			if err != nil {
				return err
			}
			kinds, names, err := getArgs(args)
			if err != nil {
				return err
			}
			var lo listOptions
			for _, kind := range kinds {
				if lo, err = parseListOptions(kind, names, selector, sortBy); err != nil {
					return &ExitError{Code: ExitOther, Err: err}
				}
			}
			lo.noHeaders = noHeaders
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			if watch {
				if len(kinds) > 1 {
					return &ExitError{Code: ExitOther, Err: errors.New("--watch follows one kind: get services -w")}
				}
				if out.format == "yaml" {
					return &ExitError{Code: ExitOther, Err: errors.New("--watch prints a table, -o wide, -o name, -o json (a JSON line per change), -o jsonpath or -o custom-columns")}
				}
				return watchObjects(ctx, client, w, kinds[0], names, out.format, tmpl, lo)
			}
			var listings []listing
			var errs []error
			for _, kind := range kinds {
				l, err := listKind(ctx, client, kind, names, lo)
				if err != nil {
					return err
				}
				listings = append(listings, l)
				errs = append(errs, l.errs...)
			}
			if err := printListings(w, out.format, tmpl, names, listings, noHeaders); err != nil {
				return err
			}
			return join(errs)
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "wide", "json", "yaml", "name", formatJSONPath+"=TEMPLATE", formatCustomColumns+"=SPEC")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the objects, print each change as it happens (EVENT column; -o json: a JSON line per change), until interrupted")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "services only: select by tag (-l checkout, -l tag=checkout; a,b: both)")
	noHeadersFlag(cmd, &noHeaders)
	cmd.Flags().StringVar(&sortBy, "sort-by", "", "order by a field of the API object (.name, .bridgePort, .provisioningStatus, .createdAt)")
	return cmd
}

// getArgs reads get's arguments: a kind, or kinds comma-separated as
// kubectl takes them (svc,agents), then names; or kind/name words of
// one kind.
func getArgs(args []string) (kinds, names []string, err error) {
	if strings.Contains(args[0], ",") {
		for _, k := range strings.Split(args[0], ",") {
			kind, err := resourceKind(k)
			if err != nil {
				return nil, nil, err
			}
			if !slices.Contains(kinds, kind) {
				kinds = append(kinds, kind)
			}
		}
		_, refs, err := parseRefs(append([]string{kinds[0]}, args[1:]...))
		for _, r := range refs {
			names = append(names, r.name)
		}
		return kinds, names, err
	}
	kind, refs, err := parseRefs(args)
	if err != nil || len(refs) == 0 {
		return []string{kind}, nil, err
	}
	kind, names, err = oneKind(refs)
	return []string{kind}, names, err
}

// listOptions are get's -l and --sort-by, parsed.
type listOptions struct {
	tags      []string // nil: every service
	sortBy    []string // nil: the server's order (by name)
	noHeaders bool     // --no-headers
}

// parseListOptions checks -l and --sort-by against what get lists.
func parseListOptions(kind string, names []string, selector, sortBy string) (listOptions, error) {
	var lo listOptions
	var err error
	if selector != "" {
		if kind != "services" {
			return lo, errors.New("-l selects services (by tag) only")
		}
		if len(names) > 0 {
			return lo, errors.New("-l selects among all services: give names or -l, not both")
		}
		if lo.tags, err = parseSelector(selector); err != nil {
			return lo, err
		}
	}
	if sortBy != "" {
		lo.sortBy, err = parseSortBy(sortBy)
	}
	return lo, err
}

// listing is what get found of one kind: the objects as the API answers
// them, in the order to print, and an error for each name not found.
type listing struct {
	kind string
	raws []json.RawMessage
	errs []error
}

// listKind lists the objects of kind: those named, else all (those -l
// selects), sorted by --sort-by.
func listKind(ctx context.Context, c *Client, kind string, names []string, lo listOptions) (listing, error) {
	l := listing{kind: kind}
	var err error
	switch kind {
	case "services":
		err = l.services(ctx, c, names, lo.tags)
	case "agents":
		err = l.agents(ctx, c, names)
	default:
		err = l.microservices(ctx, c, names)
	}
	if err != nil {
		return l, err
	}
	l.raws, err = sortByField(l.raws, func(r json.RawMessage) json.RawMessage { return r }, lo.sortBy)
	return l, err
}

func (l *listing) services(ctx context.Context, c *Client, names, tags []string) error {
	if len(names) == 0 {
		svcs, err := c.ListServices(ctx)
		if err != nil {
			return err
		}
		// Selected here, not by the server: the CLI reads every page
		// anyway, and so -l works with any server.
		if tags != nil {
			svcs = selectServices(svcs, tags)
		}
		l.raws = rawsOf(svcs, func(s Service) json.RawMessage { return s.Raw })
		return nil
	}
	for _, n := range names {
		s, err := c.GetService(ctx, n)
		var ue *UnreachableError
		if errors.As(err, &ue) {
			return err
		}
		if err != nil {
			l.errs = append(l.errs, err)
			continue
		}
		l.raws = append(l.raws, s.Raw)
	}
	return nil
}

func (l *listing) agents(ctx context.Context, c *Client, names []string) error {
	inv, err := loadInventory(ctx, c, false)
	if err != nil {
		return err
	}
	agents := inv.agents
	if len(names) > 0 {
		agents = nil
		for _, n := range names {
			if a, ok := inv.agentByName[n]; ok {
				agents = append(agents, a)
			} else if a, ok := inv.agentByUUID[n]; ok {
				agents = append(agents, a)
			} else {
				l.errs = append(l.errs, &APIError{Status: http.StatusNotFound, Name: "NotFoundError", Message: "Agent " + n + " not found"})
			}
		}
	}
	l.raws = rawsOf(agents, func(a Agent) json.RawMessage { return a.Raw })
	return nil
}

func (l *listing) microservices(ctx context.Context, c *Client, names []string) error {
	inv, err := loadInventory(ctx, c, true)
	if err != nil {
		return err
	}
	ms := inv.microservices
	if len(names) > 0 {
		ms = nil
		for _, n := range names {
			if id, ok := inv.msUUID(n); ok {
				ms = append(ms, inv.msByUUID[id])
			} else {
				l.errs = append(l.errs, &APIError{Status: http.StatusNotFound, Name: "NotFoundError", Message: "Microservice " + n + " not found"})
			}
		}
	}
	l.raws = rawsOf(ms, func(m Microservice) json.RawMessage { return m.Raw })
	return nil
}

// rawsOf is each item's API answer.
func rawsOf[T any](items []T, raw func(T) json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = raw(it)
	}
	return out
}

// printListings prints what get found, in format: -o json|yaml,
// jsonpath and custom-columns print the objects of every kind together
// (the one object asked for by name as itself, else a kind: List); a
// table is printed per kind, in turn, as kubectl does, each object named
// kind/name when there are several kinds.
func printListings(w io.Writer, format string, tmpl *templateOutput, names []string, listings []listing, noHeaders bool) error {
	var all []json.RawMessage
	for _, l := range listings {
		all = append(all, l.raws...)
	}
	single := len(listings) == 1 && len(names) == 1
	switch {
	case tmpl != nil:
		return tmpl.print(w, all, single, noHeaders)
	case format == "json" || format == "yaml":
		var docs [][]byte
		for _, l := range listings {
			d, err := documents(l.raws, watchKinds[l.kind].toDoc)
			if err != nil {
				return err
			}
			docs = append(docs, d...)
		}
		return printDocs(w, format, single, docs)
	case format == "name":
		for _, l := range listings {
			for _, raw := range l.raws {
				if _, err := fmt.Fprintf(w, "%s/%s\n", kindSingular[l.kind], watchKinds[l.kind].key(raw)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	printed := false
	for _, l := range listings {
		// An empty list says so, unless names were asked for (their
		// errors say it).
		if len(l.raws) == 0 && len(names) > 0 {
			continue
		}
		if printed {
			fmt.Fprintln(w) // between tables, as kubectl does
		}
		printed = true
		if len(l.raws) == 0 {
			fmt.Fprintf(w, "No %s.\n", l.kind)
			continue
		}
		if err := l.table(w, format == "wide", len(listings) > 1, noHeaders); err != nil {
			return err
		}
	}
	return nil
}

// table prints the listing's table; with kindNames, each object is named
// kind/name.
func (l listing) table(w io.Writer, wide, kindNames, noHeaders bool) error {
	t := newTable(w, tableHeader(noHeaders, kindHeader(l.kind, wide)...)...)
	for _, raw := range l.raws {
		row, err := kindRow(l.kind, raw, wide)
		if err != nil {
			return err
		}
		if kindNames {
			row[0] = kindSingular[l.kind] + "/" + row[0]
		}
		t.row(row...)
	}
	return t.flush()
}

// kindHeader is the header of kind's table.
func kindHeader(kind string, wide bool) []string {
	switch kind {
	case "services":
		return serviceHeader(wide)
	case "agents":
		return agentHeader(wide)
	}
	return microserviceHeader(wide)
}

func serviceHeader(wide bool) []string {
	header := []string{"NAME", "TYPE", "BACKEND", "BRIDGE-PORT", "ENDPOINT", "STATUS", "AGE"}
	if wide {
		header = append(header, "TAGS", "BRIDGE", "GENERATION", "WORKFLOW", "ERROR")
	}
	return header
}

func serviceRow(s Service, wide bool, now time.Time) []string {
	row := []string{s.Name, s.Type, backend(s), fmt.Sprint(s.BridgePort), endpoint(s), status(s), age(s.CreatedAt, now)}
	if wide {
		row = append(row, strings.Join(s.Tags, ","), s.DefaultBridgeName,
			fmt.Sprintf("%d/%d", s.ObservedGeneration, s.Generation), s.WorkflowID, s.ErrorText())
	}
	return row
}

func agentHeader(wide bool) []string {
	header := []string{"NAME", "ROUTER-MODE", "HOST", "DEFAULT-ROUTER", "TAGS", "AGE"}
	if wide {
		header = append(header, "UUID", "UPSTREAM-ROUTERS")
	}
	return header
}

func agentRow(a Agent, wide bool, now time.Time) []string {
	row := []string{a.Name, a.RouterMode, a.Host, yesNo(a.DefaultRouter), strings.Join(a.Tags, ","), age(a.CreatedAt, now)}
	if wide {
		row = append(row, a.UUID, strings.Join(a.UpstreamRouterNames, ","))
	}
	return row
}

func microserviceHeader(wide bool) []string {
	header := []string{"NAME", "AGENT", "HOST-NETWORK", "AGE"}
	if wide {
		header = append(header, "UUID")
	}
	return header
}

func microserviceRow(m Microservice, wide bool, now time.Time) []string {
	row := []string{m.Application + "/" + m.Name, m.AgentName, yesNo(m.HostNetworkMode), age(m.CreatedAt, now)}
	if wide {
		row = append(row, m.UUID)
	}
	return row
}
