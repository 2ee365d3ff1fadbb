package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"svcbridge/importer"
	"svcbridge/service"
	"svcbridge/wire"
)

func importCmd(o Options) *cobra.Command {
	var c conn
	var from, token, tokenFile, tagPrefix, portRange, renameFile, credsDir string
	var renames, skips []string
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
service holds it. A port moves to the highest free port of BRIDGE_PORTS_RANGE:
the controller hands out its lowest free ports, so its next services keep
theirs in a later import. Agent tags of the controller's prefix
(service.datasance.com/tag) get svcbridge's SERVICE_ANNOTATION_TAG, so that they
select the same services. The import reads that prefix and BRIDGE_PORTS_RANGE
from the server first (GET /api/v3/settings); a --tag-prefix or
--bridge-ports-range that differs from the server's is refused, with the fix,
before anything is read from the controller or written. Each object prints one
line:

  agent/hub: created (agent token, shown once: ...)
  service/checkout: created, bridgePort 10024 kept
  service/billing: created, bridgePort 10024 -> 65535 (shared with checkout)
  microservice/orders/checkout: unchanged
  service/legacy: conflict, svcbridge holds it with targetPort "22", the source with "2222"
  agent/Edge_5: refused, Invalid format for field 'name': ... (400 ValidationError)
  microservice/orders/sensor: not imported because agent Edge_5 was refused

An object svcbridge already holds as the controller does is unchanged; one it
holds otherwise is a conflict and is left alone; one svcbridge refuses is
refused, with its reason, and what needs it (a microservice on a refused agent,
a service on either) is not imported. --dry-run sends every create with
?dryRun=true: svcbridge checks it as the real create and stores nothing, so the
dry run reports what the real run would refuse.

What the controller accepts and svcbridge refuses (a name with '_' or '.') gets
a way through: --rename KIND/OLD=NEW (KIND agent, microservice or service; a
microservice is APPLICATION/NAME) imports it under another name, and every
reference to it follows (they are by uuid); --skip KIND/NAME leaves it, and what
needs it, out. Pass the same renames and skips to every later run.

Running the import again is safe: it finishes a partial import, and once
everything is imported every line says unchanged (or skipped). The exit code is
2 when an object is in conflict, refused or not imported, 0 when every object
is created, unchanged or skipped. The controller's token is sent to it only,
and never printed. --credentials-dir DIR writes each created agent's token to
DIR/AGENT.token (mode 0600), for svcbridge router-sync --token-file, instead of
printing it.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge import --from https://controller.example.com:51121 --from-token-file token --dry-run
  svcbridge import --from https://controller.example.com:51121 --from-token-file token \
    --rename agent/Edge_5=edge-5 --skip agent/lab --credentials-dir ./agent-tokens`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			src, err := sourceFrom(from, token, tokenFile)
			if err != nil {
				return err
			}
			choices, err := importChoices(renames, renameFile, skips)
			if err != nil {
				return err
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			server, err := client.Settings(ctx)
			if err != nil {
				return err
			}
			using, err := importSettings(server, client.Server, tagPrefix, portRange)
			if err != nil {
				return err
			}
			if dryRun {
				if err := client.CheckDryRun(ctx); err != nil {
					return err
				}
				client.DryRun = true
			}
			read, err := src.read(ctx)
			if err != nil {
				return err
			}
			if err := choices.Check(read); err != nil {
				return &ExitError{Code: ExitOther, Err: fmt.Errorf("refusing to import, nothing was written: %w", err)}
			}
			// Last of the checks, before the first write: it makes the
			// directory.
			creds := credentialsDir(credsDir)
			if err := creds.prepare(dryRun); err != nil {
				return err
			}
			held, err := readTarget(ctx, client)
			if err != nil {
				return err
			}
			plan := importer.NewPlan(read, held, using, choices)
			w := &importWriter{c: client, out: cmd.OutOrStdout(), dryRun: dryRun, creds: creds}
			return w.apply(ctx, plan)
		}),
	}
	c.flags(cmd)
	cmd.Flags().StringVar(&from, "from", "", "URL of the ioFog controller to import from, e.g. https://controller.example.com:51121")
	cmd.Flags().StringVar(&token, "from-token", "", "the controller's bearer token (an access token of its users)")
	cmd.Flags().StringVar(&tokenFile, "from-token-file", "", "a file holding the controller's bearer token")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "send every create as a dry run (?dryRun=true): svcbridge checks it and stores nothing")
	cmd.Flags().StringVar(&tagPrefix, "tag-prefix", "",
		"the SERVICE_ANNOTATION_TAG you expect the server to run with; the import refuses to run when the server's differs (default: the server's)")
	cmd.Flags().StringVar(&portRange, "bridge-ports-range", "",
		"the BRIDGE_PORTS_RANGE you expect the server to run with; the import refuses to run when the server's differs (default: the server's)")
	cmd.Flags().StringArrayVar(&renames, "rename", nil,
		"KIND/OLD=NEW: import the controller's object under another name (KIND agent, microservice or service; a microservice is APPLICATION/NAME); repeatable")
	cmd.Flags().StringVar(&renameFile, "rename-file", "", "a file of renames, one KIND/OLD=NEW a line (# comments)")
	cmd.Flags().StringArrayVar(&skips, "skip", nil, "KIND/NAME: leave the controller's object, and what needs it, out; repeatable")
	cmd.Flags().StringVar(&credsDir, "credentials-dir", "",
		"write each created agent's token to DIR/AGENT.token (mode 0600; DIR made 0700) instead of printing it")
	return cmd
}

// importChoices reads --rename, --rename-file and --skip.
func importChoices(renames []string, file string, skips []string) (importer.Choices, error) {
	var c importer.Choices
	usage := func(flag string, err error) error {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("%s: %w", flag, err)}
	}
	for _, r := range renames {
		if err := c.AddRename(r); err != nil {
			return c, usage("--rename", err)
		}
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return c, usage("--rename-file", err)
		}
		defer f.Close()
		if err := c.ReadRenames(f, file); err != nil {
			return c, usage("--rename-file", err)
		}
	}
	for _, s := range skips {
		if err := c.AddSkip(s); err != nil {
			return c, usage("--skip", err)
		}
	}
	return c, nil
}

// importSettings are the plan's settings: the server's (GET
// /api/v3/settings of svcbridge at serverURL), which decide what its agent
// tags select and which bridge ports it gives. A --tag-prefix or
// --bridge-ports-range that differs is refused before anything is read
// from the controller or written: a plan made with it would write agent
// tags that select nothing on this server, or keep and move ports by a
// range it does not have.
func importSettings(server wire.Settings, serverURL, tagPrefix, portRange string) (importer.Settings, error) {
	refuse := func(format string, args ...any) error {
		return &ExitError{Code: ExitOther, Err: fmt.Errorf("refusing to import, nothing was written: "+format, args...)}
	}
	s := importer.Settings{TagPrefix: server.ServiceAnnotationTag, BridgePorts: importer.Ports(server.BridgePorts),
		ControlPlane: service.ControlPlane(server.ControlPlane)}
	if tagPrefix != "" && tagPrefix != s.TagPrefix {
		return s, refuse("--tag-prefix is %s, but svcbridge at %s runs with SERVICE_ANNOTATION_TAG=%s: the agent tags %s: T "+
			"would become %s: T and select no service there. Leave --tag-prefix out (the import then follows the server's), "+
			"or run svcbridge with SERVICE_ANNOTATION_TAG=%s",
			tagPrefix, serverURL, s.TagPrefix, importer.SourceTagPrefix, tagPrefix, tagPrefix)
	}
	if portRange != "" {
		want, err := importer.ParsePorts(portRange)
		if err != nil {
			return s, &ExitError{Code: ExitOther, Err: fmt.Errorf("--bridge-ports-range: %w", err)}
		}
		if want != s.BridgePorts {
			return s, refuse("--bridge-ports-range is %s, but svcbridge at %s runs with BRIDGE_PORTS_RANGE=%s: "+
				"the plan would keep and move bridge ports by a range the server does not have. "+
				"Leave --bridge-ports-range out (the import then follows the server's), or run svcbridge with BRIDGE_PORTS_RANGE=%s",
				portRange, serverURL, server.BridgePortsRange, portRange)
		}
	}
	return s, nil
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
