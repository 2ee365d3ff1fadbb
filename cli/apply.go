package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"svcbridge/service"
)

// Kinds apply understands.
var applyKinds = []string{"Service", "Agent", "AgentConfig", "Microservice"}

// document is one YAML document of an apply or delete file.
type document struct {
	source string // file name, "-" for stdin
	index  int    // 1-based position in its file
	item   int    // 1-based position in its kind: List, 0 outside one
	kind   string
	name   string
	node   *yaml.Node
	body   []byte // the document alone, as sent to the API
}

func (d document) where() string {
	if d.item > 0 {
		return fmt.Sprintf("%s, document %d, item %d", d.source, d.index, d.item)
	}
	return fmt.Sprintf("%s, document %d", d.source, d.index)
}

// ref is kind/name as apply prints it.
func (d document) ref() string {
	k := strings.ToLower(d.kind)
	if k == "agentconfig" {
		k = "agent"
	}
	name := d.name
	if name == "" {
		name = "(no name)"
	}
	return k + "/" + name
}

// readDocuments reads every document of the files (a directory: its
// *.yaml, *.yml and *.json files; "-": stdin), in order. Empty documents
// are skipped; a file that does not parse is an error before anything is
// sent.
func readDocuments(files []string, stdin io.Reader) ([]document, error) {
	var out []document
	for _, f := range files {
		paths := []string{f}
		if f != "-" {
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				entries, err := os.ReadDir(f)
				if err != nil {
					return nil, err
				}
				paths = nil
				for _, e := range entries {
					if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
						paths = append(paths, filepath.Join(f, e.Name()))
					}
				}
				sort.Strings(paths)
			}
		}
		for _, p := range paths {
			var data []byte
			var err error
			if p == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(p)
			}
			if err != nil {
				return nil, err
			}
			docs, err := splitDocuments(p, data)
			if err != nil {
				return nil, err
			}
			out = append(out, docs...)
		}
	}
	return out, nil
}

// splitDocuments splits a YAML stream into its documents.
func splitDocuments(source string, data []byte) (docs []document, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("%s: cannot parse YAML: %v", source, r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %v", source, i, err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].ShortTag() == "!!null") {
			continue // an empty document, e.g. after a trailing ---
		}
		items, err := listItems(&n)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %v", source, i, err)
		}
		for j, item := range items {
			d, err := newDocument(item)
			if err != nil {
				return nil, fmt.Errorf("%s, document %d: %v", source, i, err)
			}
			d.source, d.index = source, i
			if item != &n {
				d.item = j + 1
			}
			docs = append(docs, d)
		}
	}
}

// listItems is the documents a YAML document holds: the items of a kind:
// List (what get -o yaml|json prints for several objects), else itself.
func listItems(n *yaml.Node) ([]*yaml.Node, error) {
	var head struct {
		Kind  string    `yaml:"kind"`
		Items yaml.Node `yaml:"items"`
	}
	if n.Decode(&head) != nil || head.Kind != "List" {
		return []*yaml.Node{n}, nil
	}
	if head.Items.Kind != yaml.SequenceNode {
		return nil, errors.New("a kind: List needs items: a list of documents")
	}
	return head.Items.Content, nil
}

// newDocument reads one document's kind and name, and makes the body the
// API gets: the document without status, which is what the server set
// (get -o yaml prints it) and not the client's to send.
func newDocument(n *yaml.Node) (document, error) {
	body, err := yaml.Marshal(withoutStatus(n))
	if err != nil {
		return document{}, err
	}
	d := document{node: n, body: body}
	var head struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	_ = n.Decode(&head) // a bad shape is the API's to explain
	d.kind, d.name = head.Kind, head.Metadata.Name
	return d, nil
}

// withoutStatus is the mapping n (or a document holding one) without
// its status key; n is left as it is.
func withoutStatus(n *yaml.Node) *yaml.Node {
	m := n
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return n
	}
	out := *m
	out.Content = nil
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "status" {
			out.Content = append(out.Content, m.Content[i], m.Content[i+1])
		}
	}
	return &out
}

func applyCmd(o Options) *cobra.Command {
	var c conn
	var w waitFlags
	var dry dryRunFlag
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update services, agents and microservices from YAML",
		Long: `Create or update what YAML files declare: kind Service, Agent, AgentConfig and
Microservice, several documents per file (separated by ---) or the items of a
kind: List. What 'svcbridge get -o yaml|json' prints applies as it is: a
document's status (what the server set) is not sent.

Documents are applied in file order, so put agents and microservices before the
services that use them. Each document prints one line:

  agent/fog-a created (agent token, shown once: ...)
  service/checkout created | configured | unchanged

A Service that does not exist is created (POST /api/v3/services/yaml); one that
exists is replaced by the document (PATCH /api/v3/services/yaml/{name}) unless it
already matches it ("unchanged"). An Agent or AgentConfig document creates the
agent or replaces it (POST /api/v3/agents/yaml). A Microservice document has
metadata.name "application/name" (or name plus spec.application), spec.agent
(an agent name or uuid, or {name: ...}) and optionally spec.hostNetworkMode.

A document that fails does not stop the others; the exit code then reports the
worst failure. With --wait, apply then waits until every applied service is
ready (exit 3 with its provisioningError if one fails, 4 after --timeout). apply
writes nothing for an unchanged service, and --wait asks for no reconcile of it
either: it waits on the service as it is, through the reconcile the server
requested itself when an agent or microservice it depends on changed (in this
run or before). So an unchanged failed service ends the wait with exit 3 and its
provisioningError at once: 'svcbridge reconcile NAME --wait' retries it.

Ready means the service's objects are written to the routers' configs;
--wait=rollout waits on until the router of every agent the service selects holds
its listener (its router-sync reported so; an agent without one acknowledged the
change) and no other still does. A router that refuses the listener ends the wait
with exit 3, naming the agent and the router's reason; a timeout names the agents
still to go and why.

With --dry-run=server (also --dry-run alone or =client: the server's rules are the
only ones) every write is sent with ?dryRun=true: the server runs it,
with all its checks and allocations, answers what it would do and stores nothing.
Each line then ends with (server dry run); a created or changed service also says
the bridgePort it would have and the agents that would listen. 'svcbridge diff -f'
shows the changes themselves. As with kubectl, each document is checked against
what is stored: one that needs an object an earlier document of the same run
would create (a service on a new microservice) is refused in a dry run.
` + connectionHelp + exitCodesHelp,
		Example: `  svcbridge apply -f checkout.yaml
  svcbridge apply -f fleet/ --wait --timeout 60s
  svcbridge apply -f checkout.yaml --wait=rollout
  svcbridge apply -f checkout.yaml --dry-run=server
  cat checkout.yaml | svcbridge apply -f -`,
		Args: cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("apply needs -f FILE (a file, a directory, or - for stdin)")
			}
			client, err := c.client(cmd)
			if err != nil {
				return err
			}
			if err := dry.apply(cmd.Context(), client, w.wait); err != nil {
				return err
			}
			docs, err := readDocuments(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if len(docs) == 0 {
				return errors.New("no documents to apply")
			}
			return runApply(cmd.Context(), cmd, client, docs, w)
		}),
	}
	c.flags(cmd)
	w.flags(cmd, "wait until every applied service is ready; =rollout: and until every agent it selects has written its listener", true)
	dry.flags(cmd)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "YAML file, directory, or - for stdin (repeatable)")
	cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// runApply applies docs in order, then waits if asked.
func runApply(ctx context.Context, cmd *cobra.Command, c *Client, docs []document, w waitFlags) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var errs []error
	type applied struct {
		name      string
		unchanged bool
	}
	var services []applied
	for _, d := range docs {
		line, err := applyOne(ctx, c, d)
		if err != nil {
			var ue *UnreachableError
			if errors.As(err, &ue) {
				// Nothing else can work.
				return err
			}
			fmt.Fprintf(errOut, "error: %s (%s): %v\n", d.ref(), d.where(), err)
			errs = append(errs, err)
			continue
		}
		unchanged := strings.HasSuffix(line, " unchanged")
		fmt.Fprintln(out, line+dryRunNote(c))
		if d.kind == "Service" {
			services = append(services, applied{d.name, unchanged})
		}
	}
	if w.wait {
		var targets []*waitTarget
		for _, s := range services {
			if !s.unchanged {
				// A new generation: its reconcile is the answer.
				targets = append(targets, &waitTarget{name: s.name, goal: untilReady})
				continue
			}
			// apply wrote nothing for an unchanged service, and asks for
			// nothing either: it waits on the service as it is. A change
			// of an agent or microservice it depends on (of this run or
			// before) had the server request its reconcile, with the
			// change: that reconcile is waited for.
			cur, err := c.GetService(ctx, s.name)
			if err != nil {
				fmt.Fprintf(errOut, "error: service/%s: %v\n", s.name, err)
				errs = append(errs, err)
				continue
			}
			targets = append(targets, &waitTarget{name: s.name, goal: untilReconciled, request: cur.ReconcileRequest, unchanged: true})
		}
		if err := w.waiter(cmd, c).wait(ctx, targets, w.timeout); err != nil {
			errs = append(errs, err)
			PrintErrors(errOut, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := join(errs)
	return &reported{code: ExitCode(err), msg: err.Error()}
}

// applyOne applies one document and returns its line.
func applyOne(ctx context.Context, c *Client, d document) (string, error) {
	switch d.kind {
	case "Service":
		return applyService(ctx, c, d)
	case "Agent", "AgentConfig":
		return applyAgent(ctx, c, d)
	case "Microservice":
		return applyMicroservice(ctx, c, d)
	case "":
		return "", errors.New("the document has no kind")
	}
	return "", fmt.Errorf("kind %s is not one of %s", d.kind, strings.Join(applyKinds, ", "))
}

// ---- Service ----

func applyService(ctx context.Context, c *Client, d document) (string, error) {
	if d.name == "" {
		// Let the API say what is missing.
		_, err := c.CreateServiceYAML(ctx, d.body)
		if err == nil {
			err = errors.New("created a service without metadata.name")
		}
		return "", err
	}
	cur, err := c.GetService(ctx, d.name)
	if NotFound(err) {
		var created Service
		created, err = c.CreateServiceYAML(ctx, d.body)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "already exists") {
			if err != nil {
				return "", err
			}
			return d.ref() + " created" + dryRunDetail(c, created), nil
		}
		// Created concurrently: replace it below.
		if cur, err = c.GetService(ctx, d.name); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	if serviceUnchanged(d, cur) {
		return d.ref() + " unchanged", nil
	}
	would, err := c.ReplaceServiceYAML(ctx, d.name, d.body)
	if err != nil {
		return "", err
	}
	return d.ref() + " configured" + dryRunDetail(c, would), nil
}

// dryRunDetail is, in a dry run, what the server says the service would
// be: its bridgePort and the agents that would listen.
func dryRunDetail(c *Client, s Service) string {
	if !c.DryRun {
		return ""
	}
	var agents []string
	for _, e := range s.Distribution {
		if wanted(e.Wanted) {
			agents = append(agents, e.AgentName)
		}
	}
	listen := "no agent would listen"
	if len(agents) > 0 {
		listen = "would listen on " + strings.Join(agents, ", ")
	}
	return fmt.Sprintf(": bridgePort %d, %s", s.BridgePort, listen)
}

// serviceUnchanged reports whether the document declares what the server
// stores, read, defaulted and compared by the service package's rules as
// the server reads a document (service.DecodeYAML, Spec.WithDefaults,
// service.SameSpec). Anything it cannot tell for sure counts as changed.
func serviceUnchanged(d document, cur Service) bool {
	p, err := service.DecodeYAML(d.body)
	if err != nil {
		return false
	}
	want := p.Apply(service.Spec{Tags: []string{}}).WithDefaults()
	stored := service.Spec{Name: cur.Name, Tags: cur.Tags, Type: cur.Type, Resource: cur.Resource, TargetPort: cur.TargetPort,
		DefaultBridge: cur.DefaultBridge, ServicePort: cur.ServicePort, K8sType: cur.K8sType}
	if len(cur.Kubernetes) > 0 && json.Unmarshal(cur.Kubernetes, &stored.Kubernetes) != nil {
		return false
	}
	// The server stores the references by uuid.
	if sameRef(want.Resource, cur.Resource, cur.ResourceName) {
		want.Resource = cur.Resource
	}
	if sameRef(want.DefaultBridge, cur.DefaultBridge, cur.DefaultBridgeName) {
		want.DefaultBridge = cur.DefaultBridge
	}
	// On a remote control plane the server sets servicePort to the bridge
	// port and drops k8sType, whatever the document says.
	if cur.K8sType == nil && cur.ServicePort != nil && *cur.ServicePort == cur.BridgePort {
		want.ServicePort, want.K8sType = cur.ServicePort, cur.K8sType
	}
	return service.SameSpec(stored, want)
}

// sameRef reports whether ref, as a document writes it, names what the
// server stores as id and shows as name (by uuid or by name: requests take
// either).
func sameRef(ref, id, name string) bool { return ref == id || ref == name }

// ---- Agent, AgentConfig ----

type agentDoc struct {
	Metadata struct {
		Name string    `yaml:"name"`
		Tags *[]string `yaml:"tags"`
	} `yaml:"metadata"`
	Spec struct {
		Host            string    `yaml:"host"`
		RouterMode      string    `yaml:"routerMode"`
		UpstreamRouters *[]string `yaml:"upstreamRouters"`
		DefaultRouter   bool      `yaml:"defaultRouter"`
	} `yaml:"spec"`
}

func applyAgent(ctx context.Context, c *Client, d document) (string, error) {
	if d.name != "" {
		if cur, err := c.GetAgent(ctx, d.name); err == nil && cur.Name == d.name && agentUnchanged(d, cur) {
			return d.ref() + " unchanged", nil
		} else if err != nil && !NotFound(err) {
			return "", err
		}
	}
	a, created, err := c.ApplyAgentYAML(ctx, d.body)
	if err != nil {
		return "", err
	}
	ref := "agent/" + a.Name
	if !created {
		return ref + " configured", nil
	}
	if a.Token != "" && !c.DryRun { // a dry run's token was never stored
		return ref + " created (agent token, shown once: " + a.Token + ")", nil
	}
	return ref + " created", nil
}

func agentUnchanged(d document, cur Agent) bool {
	var want agentDoc
	if err := d.node.Decode(&want); err != nil {
		return false
	}
	mode := want.Spec.RouterMode
	if mode == "" {
		mode = "edge"
	}
	tags, ups := []string{}, []string{}
	if want.Metadata.Tags != nil {
		tags = *want.Metadata.Tags
	}
	if want.Spec.UpstreamRouters != nil {
		ups = *want.Spec.UpstreamRouters
	}
	if want.Spec.Host != cur.Host || mode != cur.RouterMode || want.Spec.DefaultRouter != cur.DefaultRouter ||
		!slices.Equal(tags, nonNil(cur.Tags)) || len(ups) != len(cur.UpstreamRouters) || len(ups) != len(cur.UpstreamRouterNames) {
		return false
	}
	for i, ref := range ups {
		if !sameRef(ref, cur.UpstreamRouters[i], cur.UpstreamRouterNames[i]) {
			return false
		}
	}
	return true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- Microservice ----

func applyMicroservice(ctx context.Context, c *Client, d document) (string, error) {
	app, name, agent, hostNet, err := microserviceFields(d)
	if err != nil {
		return "", err
	}
	m, found, err := c.MicroserviceNamed(ctx, app, name)
	if err != nil {
		return "", err
	}
	ref := "microservice/" + app + "/" + name
	if found {
		fields := map[string]any{}
		if agent != "" && !sameRef(agent, m.Agent, m.AgentName) {
			fields["agent"] = agent // the API explains an unknown agent
		}
		if hostNet != nil && *hostNet != m.HostNetworkMode {
			fields["hostNetworkMode"] = *hostNet
		}
		if len(fields) == 0 {
			return ref + " unchanged", nil
		}
		if _, err := c.PatchMicroservice(ctx, m.UUID, fields); err != nil {
			return "", err
		}
		return ref + " configured", nil
	}
	fields := map[string]any{"application": app, "name": name}
	if agent != "" {
		fields["agent"] = agent
	}
	if hostNet != nil {
		fields["hostNetworkMode"] = *hostNet
	}
	if _, err := c.CreateMicroservice(ctx, fields); err != nil {
		return "", err
	}
	return ref + " created", nil
}

// microserviceFields reads a kind: Microservice document.
func microserviceFields(d document) (app, name, agent string, hostNet *bool, err error) {
	var doc struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			Application     string    `yaml:"application"`
			Agent           yaml.Node `yaml:"agent"`
			HostNetworkMode *bool     `yaml:"hostNetworkMode"`
		} `yaml:"spec"`
	}
	if err := d.node.Decode(&doc); err != nil {
		return "", "", "", nil, fmt.Errorf("invalid Microservice document: %v", err)
	}
	name, app = doc.Metadata.Name, doc.Spec.Application
	if a, n, ok := strings.Cut(name, "/"); ok {
		app, name = a, n
	}
	if app == "" || name == "" {
		return "", "", "", nil, errors.New("a Microservice needs metadata.name application/name (or name and spec.application)")
	}
	switch doc.Spec.Agent.Kind {
	case 0:
	case yaml.ScalarNode:
		agent = doc.Spec.Agent.Value
	case yaml.MappingNode:
		var a struct {
			Name string `yaml:"name"`
		}
		if err := doc.Spec.Agent.Decode(&a); err != nil {
			return "", "", "", nil, fmt.Errorf("invalid spec.agent: %v", err)
		}
		agent = a.Name
	default:
		return "", "", "", nil, errors.New("spec.agent must be an agent name or {name: ...}")
	}
	return app, name, agent, doc.Spec.HostNetworkMode, nil
}
