package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
		Use:   "get services|agents|microservices [NAME...] | get KIND/NAME...",
		Short: "List services, agents or microservices",
		Long: `List services, agents or microservices (aliases: svc, agent, ms), or the named ones
(also as kind/name, as -o name prints them: get service/checkout).

Tables are for people. -o json and -o yaml print the documents apply reads (kind,
metadata, spec, and what the server sets under status, which apply ignores): the
document with one name, else a kind: List of them; 'svcbridge apply -f' takes
either back unchanged. -o name prints kind/name lines, which every verb taking
names accepts. -o wide adds columns.

With --watch (-w), get prints the objects, then each change as the server reports
it (ADDED, MODIFIED, DELETED in an EVENT column; -o json: one {"type", "object"}
line per change, the object as -o json prints it), until interrupted. A dropped
connection is opened again and nothing is missed or printed twice.

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
  svcbridge get microservices -o json
  svcbridge get services -w
  svcbridge get services -l tag=checkout -o name | xargs svcbridge reconcile
  svcbridge get services --sort-by .bridgePort`,
		Args:              needResource("get"),
		ValidArgsFunction: completeResources(&c),
		RunE: run(o, func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			kind, refs, err := parseRefs(args)
			if err != nil {
				return err
			}
			var names []string
			if len(refs) > 0 {
				if kind, names, err = oneKind(refs); err != nil {
					return err
				}
			}
			lo, err := parseListOptions(kind, names, selector, sortBy)
			if err != nil {
				return &ExitError{Code: ExitOther, Err: err}
			}
			lo.noHeaders = noHeaders
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			if watch {
				if out.format == "yaml" {
					return &ExitError{Code: ExitOther, Err: errors.New("--watch prints a table, -o wide, -o name or -o json (a JSON line per change)")}
				}
				return watchObjects(ctx, client, w, kind, names, out.format, noHeaders, lo)
			}
			switch kind {
			case "services":
				return getServices(ctx, client, w, names, out.format, lo)
			case "agents":
				return getAgents(ctx, client, w, names, out.format, lo)
			}
			return getMicroservices(ctx, client, w, names, out.format, lo)
		}),
	}
	c.flags(cmd)
	out.flags(cmd, "wide", "json", "yaml", "name")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the objects, print each change as it happens (EVENT column; -o json: a JSON line per change), until interrupted")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "services only: select by tag (-l checkout, -l tag=checkout; a,b: both)")
	noHeadersFlag(cmd, &noHeaders)
	cmd.Flags().StringVar(&sortBy, "sort-by", "", "order by a field of the API object (.name, .bridgePort, .provisioningStatus, .createdAt)")
	return cmd
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

func getServices(ctx context.Context, c *Client, w io.Writer, names []string, format string, lo listOptions) error {
	if len(names) == 0 {
		svcs, err := c.ListServices(ctx)
		if err != nil {
			return err
		}
		// Selected here, not by the server: the CLI reads every page
		// anyway, and so -l works with any server.
		if lo.tags != nil {
			svcs = selectServices(svcs, lo.tags)
		}
		if svcs, err = sortByField(svcs, func(s Service) json.RawMessage { return s.Raw }, lo.sortBy); err != nil {
			return err
		}
		return printServices(ctx, c, w, names, svcs, format, lo.noHeaders)
	}
	var svcs []Service
	var errs []error
	for _, n := range names {
		s, err := c.GetService(ctx, n)
		var ue *UnreachableError
		if errors.As(err, &ue) {
			return err
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		svcs = append(svcs, s)
	}
	svcs, err := sortByField(svcs, func(s Service) json.RawMessage { return s.Raw }, lo.sortBy)
	if err != nil {
		return err
	}
	if err := printServices(ctx, c, w, names, svcs, format, lo.noHeaders); err != nil {
		return err
	}
	return join(errs)
}

func printServices(ctx context.Context, c *Client, w io.Writer, names []string, svcs []Service, format string, noHeaders bool) error {
	switch format {
	case "json", "yaml":
		raws := make([]json.RawMessage, len(svcs))
		for i, s := range svcs {
			raws[i] = s.Raw
		}
		return printDocuments(w, format, names, raws, serviceDocument)
	case "name":
		for _, s := range svcs {
			fmt.Fprintln(w, "service/"+s.Name)
		}
		return nil
	}
	if len(svcs) == 0 {
		if len(names) == 0 {
			fmt.Fprintln(w, "No services.")
		}
		return nil
	}
	wide := format == "wide"
	t := newTable(w, tableHeader(noHeaders, serviceHeader(wide)...)...)
	now := time.Now()
	for _, s := range svcs {
		t.row(serviceRow(s, wide, now)...)
	}
	return t.flush()
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

func getAgents(ctx context.Context, c *Client, w io.Writer, names []string, format string, lo listOptions) error {
	inv, err := loadInventory(ctx, c, false)
	if err != nil {
		return err
	}
	agents := inv.agents
	var errs []error
	if len(names) > 0 {
		agents = nil
		for _, n := range names {
			if a, ok := inv.agentByName[n]; ok {
				agents = append(agents, a)
			} else if a, ok := inv.agentByUUID[n]; ok {
				agents = append(agents, a)
			} else {
				errs = append(errs, &APIError{Status: http.StatusNotFound, Name: "NotFoundError", Message: "Agent " + n + " not found"})
			}
		}
	}
	if agents, err = sortByField(agents, func(a Agent) json.RawMessage { return a.Raw }, lo.sortBy); err != nil {
		return err
	}
	switch format {
	case "json", "yaml":
		raws := make([]json.RawMessage, len(agents))
		for i, a := range agents {
			raws[i] = a.Raw
		}
		if err := printDocuments(w, format, names, raws, agentDocument); err != nil {
			return err
		}
	case "name":
		for _, a := range agents {
			fmt.Fprintln(w, "agent/"+a.Name)
		}
	default:
		if len(agents) == 0 && len(names) == 0 {
			fmt.Fprintln(w, "No agents.")
			break
		}
		if len(agents) == 0 {
			break
		}
		wide := format == "wide"
		t := newTable(w, tableHeader(lo.noHeaders, agentHeader(wide)...)...)
		now := time.Now()
		for _, a := range agents {
			t.row(agentRow(a, wide, now)...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return join(errs)
}

func getMicroservices(ctx context.Context, c *Client, w io.Writer, names []string, format string, lo listOptions) error {
	inv, err := loadInventory(ctx, c, true)
	if err != nil {
		return err
	}
	ms := inv.microservices
	var errs []error
	if len(names) > 0 {
		ms = nil
		for _, n := range names {
			if id, ok := inv.msUUID(n); ok {
				ms = append(ms, inv.msByUUID[id])
			} else {
				errs = append(errs, &APIError{Status: http.StatusNotFound, Name: "NotFoundError", Message: "Microservice " + n + " not found"})
			}
		}
	}
	if ms, err = sortByField(ms, func(m Microservice) json.RawMessage { return m.Raw }, lo.sortBy); err != nil {
		return err
	}
	switch format {
	case "json", "yaml":
		raws := make([]json.RawMessage, len(ms))
		for i, m := range ms {
			raws[i] = m.Raw
		}
		if err := printDocuments(w, format, names, raws, microserviceDocument); err != nil {
			return err
		}
	case "name":
		for _, m := range ms {
			fmt.Fprintln(w, "microservice/"+m.Application+"/"+m.Name)
		}
	default:
		if len(ms) == 0 && len(names) == 0 {
			fmt.Fprintln(w, "No microservices.")
			break
		}
		if len(ms) == 0 {
			break
		}
		wide := format == "wide"
		t := newTable(w, tableHeader(lo.noHeaders, microserviceHeader(wide)...)...)
		now := time.Now()
		for _, m := range ms {
			t.row(microserviceRow(m, wide, now)...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return join(errs)
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
