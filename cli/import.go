package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"svcbridge/importer"
)

func importCmd(o Options) *cobra.Command {
	var c conn
	var from, token, tokenFile, tagPrefix, portRange string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "import --from URL --from-token TOKEN|--from-token-file FILE",
		Short: "Import the agents, microservices and services of a running ioFog controller",
		Long: `Read a running (Datasance) ioFog controller through its REST API
(GET /api/v3/iofog-list, /api/v3/microservices and /api/v3/services; nothing is
ever written to it) and create its agents, then its microservices, then its
services in svcbridge, with their uuids and each service's bridgePort.

A service keeps its bridgePort unless it must move, and the line says why:
another of the controller's services shares the port (its allocation race; the
first by name keeps it), the port is outside BRIDGE_PORTS_RANGE, or a svcbridge
service holds it. Agent tags of the controller's prefix (service.datasance.com/tag)
get the installation's SERVICE_ANNOTATION_TAG (--tag-prefix), so that they select
the same services. Each object prints one line:

  agent/hub: created (agent token, shown once: ...)
  service/checkout: created, bridgePort 10024 kept
  service/billing: created, bridgePort 10024 -> 10026 (shared with checkout)
  microservice/orders/checkout: unchanged
  service/legacy: conflict, svcbridge holds it with targetPort "22", the source with "2222"

An object svcbridge already holds as the controller does is unchanged; one it
holds otherwise is a conflict and is left alone. Running the import again is
safe: it finishes a partial import, and once everything is imported every line
says unchanged. --dry-run prints the plan and writes nothing. The exit code is
2 when an object is in conflict or was refused, 0 when every object is created
or unchanged. The controller's token is sent to it only, and never printed.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge import --from https://controller.example.com:51121 --from-token-file token --dry-run
  svcbridge import --from https://controller.example.com:51121 --from-token-file token`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			src, err := sourceFrom(from, token, tokenFile)
			if err != nil {
				return err
			}
			prefix := setting(tagPrefix, "SERVICE_ANNOTATION_TAG", "service.iofog.org/tag")
			ports, err := importer.ParsePorts(setting(portRange, "BRIDGE_PORTS_RANGE", "10024-65535"))
			if err != nil {
				return &ExitError{Code: ExitOther, Err: fmt.Errorf("--bridge-ports-range: %w", err)}
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			read, err := src.read(ctx)
			if err != nil {
				return err
			}
			held, err := readTarget(ctx, client)
			if err != nil {
				return err
			}
			plan := importer.NewPlan(read, held, importer.Settings{TagPrefix: prefix, BridgePorts: ports})
			w := &importWriter{c: client, out: cmd.OutOrStdout(), dryRun: dryRun}
			return w.apply(ctx, plan)
		}),
	}
	c.flags(cmd)
	cmd.Flags().StringVar(&from, "from", "", "URL of the ioFog controller to import from, e.g. https://controller.example.com:51121")
	cmd.Flags().StringVar(&token, "from-token", "", "the controller's bearer token (an access token of its users)")
	cmd.Flags().StringVar(&tokenFile, "from-token-file", "", "a file holding the controller's bearer token")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan and write nothing")
	cmd.Flags().StringVar(&tagPrefix, "tag-prefix", "",
		"the svcbridge installation's SERVICE_ANNOTATION_TAG (env SERVICE_ANNOTATION_TAG; default service.iofog.org/tag)")
	cmd.Flags().StringVar(&portRange, "bridge-ports-range", "",
		"the svcbridge installation's BRIDGE_PORTS_RANGE (env BRIDGE_PORTS_RANGE; default 10024-65535)")
	return cmd
}

// setting is a flag's value, else the environment's, else def: the
// server's settings resolve alike. Help shows def only.
func setting(flag, env, def string) string {
	return cmp.Or(flag, os.Getenv(env), def)
}

// ---- the source: read only ----

// source reads the ioFog controller. It has no way to write: every
// request is a GET.
type source struct {
	url, token string
	http       *http.Client
}

// sourceFrom checks the flags that name the source.
func sourceFrom(url, token, tokenFile string) (*source, error) {
	usage := func(format string, args ...any) error {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf(format, args...)}
	}
	if url == "" {
		return nil, usage("import needs --from URL: the ioFog controller to read")
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, usage("invalid --from %q: want http://host:port or https://host:port", url)
	}
	switch {
	case token != "" && tokenFile != "":
		return nil, usage("give --from-token or --from-token-file, not both")
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, usage("--from-token-file: %v", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, usage("--from-token-file %s is empty", tokenFile)
		}
	case token == "":
		return nil, usage("import needs --from-token TOKEN or --from-token-file FILE: the controller's bearer token")
	}
	return &source{url: strings.TrimRight(url, "/"), token: token, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// read reads the controller's agents, microservices and services.
func (s *source) read(ctx context.Context) (importer.Source, error) {
	var out importer.Source
	var fogs struct {
		Fogs []importer.SourceAgent `json:"fogs"`
	}
	if err := s.get(ctx, "/api/v3/iofog-list", &fogs); err != nil {
		return out, err
	}
	var ms struct {
		Microservices []importer.SourceMicroservice `json:"microservices"`
	}
	if err := s.get(ctx, "/api/v3/microservices", &ms); err != nil {
		return out, err
	}
	if err := s.get(ctx, "/api/v3/services", &out.Services); err != nil {
		return out, err
	}
	out.Agents, out.Microservices = fogs.Fogs, ms.Microservices
	return out, nil
}

// get GETs path into v. Errors name the controller and the path, never
// the token.
func (s *source) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("invalid --from %q: %v", s.url, err)}
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "svcbridge-import")
	resp, err := s.http.Do(req)
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("cannot reach the ioFog controller at %s: %v", s.url, errors.Unwrap(err))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("reading GET %s from the ioFog controller: %v", path, err)}
	}
	if resp.StatusCode != http.StatusOK {
		// The reference answers {name, message}, or {error} from its
		// authorization.
		var e struct{ Name, Message, Error string }
		json.Unmarshal(body, &e)
		msg := strings.TrimSpace(strings.Join([]string{e.Message, e.Error}, " "))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = ": check --from-token (a user's access token that may list agents, microservices and services)"
		}
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("the ioFog controller answered GET %s with %d: %s%s", path, resp.StatusCode, msg, hint)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("the ioFog controller's answer to GET %s is not its documented shape: %v", path, err)}
	}
	return nil
}

// readTarget reads what svcbridge holds.
func readTarget(ctx context.Context, c *Client) (importer.Target, error) {
	var t importer.Target
	agents, err := c.ListAgents(ctx)
	if err != nil {
		return t, err
	}
	for _, a := range agents {
		t.Agents = append(t.Agents, a.Agent)
	}
	ms, err := c.ListMicroservices(ctx)
	if err != nil {
		return t, err
	}
	for _, m := range ms {
		t.Microservices = append(t.Microservices, m.Microservice)
	}
	svcs, err := c.ListServices(ctx)
	if err != nil {
		return t, err
	}
	for _, s := range svcs {
		if s.ProvisioningStatus != "deleting" { // its name is free again once its objects are gone
			t.Services = append(t.Services, s.Service)
		}
	}
	return t, nil
}

// ---- writing svcbridge ----

// importWriter applies a plan through svcbridge's API (or, in a dry run,
// prints it), one line per object.
type importWriter struct {
	c      *Client
	out    io.Writer
	dryRun bool
	// counts of the lines, for the summary; errs the writes refused.
	created, unchanged, conflicts int
	errs                          []error
}

func (w *importWriter) apply(ctx context.Context, p importer.Plan) error {
	for _, n := range p.Notes {
		fmt.Fprintln(w.out, "note:", n)
	}
	for _, s := range p.Agents {
		w.step("agent", s.Name, s.Action, s.Reason, s.Note, func() (string, error) {
			a, err := w.c.CreateAgent(ctx, agentFields(s.Object))
			return "(agent token, shown once: " + a.Token + ")", err
		})
	}
	// Upstream routers of a cycle, once every agent exists.
	for _, s := range p.Agents {
		if s.Action != importer.Create || len(s.Object.Later) == 0 || w.dryRun {
			continue
		}
		if err := w.c.PatchAgent(ctx, s.Object.UUID, map[string]any{"upstreamRouters": s.Object.UpstreamRouters}); err != nil {
			w.fail("agent", s.Name, fmt.Errorf("upstreamRouters: %w", err))
		}
	}
	for _, s := range p.Microservices {
		w.step("microservice", s.Name, s.Action, s.Reason, s.Note, func() (string, error) {
			m := s.Object
			_, err := w.c.CreateMicroservice(ctx, map[string]any{"uuid": m.UUID, "application": m.Application, "name": m.Name,
				"agent": m.AgentUUID, "hostNetworkMode": m.HostNetworkMode})
			return "", err
		})
	}
	for _, s := range p.Services {
		detail := s.Note
		if s.Port != nil {
			detail = portDetail(*s.Port)
		}
		w.step("service", s.Name, s.Action, s.Reason, detail, func() (string, error) {
			_, err := w.c.CreateServiceOnPort(ctx, serviceFields(s.Object), s.Port.Port)
			return "", err
		})
	}

	summary := fmt.Sprintf("%d created, %d unchanged, %d in conflict, %d failed", w.created, w.unchanged, w.conflicts, len(w.errs))
	if w.dryRun {
		summary = fmt.Sprintf("dry run, nothing written: %d to create, %d unchanged, %d in conflict", w.created, w.unchanged, w.conflicts)
	}
	fmt.Fprintln(w.out, summary)
	if w.conflicts == 0 && len(w.errs) == 0 {
		return nil
	}
	code := ExitRejected
	for _, err := range w.errs {
		code = max(code, ExitCode(err))
	}
	return &ExitError{Code: code, Err: errors.New("import incomplete: " + summary)}
}

// step prints one object's line, creating it first unless this is a dry
// run.
func (w *importWriter) step(kind, name string, action importer.Action, reason, detail string, create func() (string, error)) {
	switch action {
	case importer.Conflict:
		w.conflicts++
		w.line(kind, name, "conflict", reason)
	case importer.Unchanged:
		w.unchanged++
		w.line(kind, name, "unchanged", detail)
	case importer.Create:
		if w.dryRun {
			w.created++
			w.line(kind, name, "create", detail)
			return
		}
		shown, err := create()
		if err != nil {
			w.fail(kind, name, err)
			return
		}
		w.created++
		w.line(kind, name, strings.TrimSpace("created "+shown), detail)
	}
}

func (w *importWriter) fail(kind, name string, err error) {
	w.errs = append(w.errs, err)
	w.line(kind, name, "failed", err.Error())
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
