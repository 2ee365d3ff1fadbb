package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/importer"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/wire"
)

// `svcbridge import` in-process, against svcbridge's real API and a fake
// ioFog controller: the plan follows the settings the server publishes
// (GET /api/v3/settings), and a --tag-prefix or --bridge-ports-range
// that differs from them is refused before the controller is read or
// anything is written, in a dry run too.

const importAdminToken = "import-test-admin-token"

// nopReconciler starts no reconcile: these tests look at what the API
// stores.
type nopReconciler struct{}

func (nopReconciler) ServiceCreated(context.Context, string) error  { return nil }
func (nopReconciler) ServiceChanged(context.Context, string) error  { return nil }
func (nopReconciler) AgentsQueued(context.Context, ...string) error { return nil }

// importBetween serves ref as the reference controller and svcbridge's
// API on a fresh SQLite store, running with the tag prefix and the bridge
// ports (first to last); it returns svcbridge's client, and a function
// that runs the import from ref into it with more flags.
func importBetween(t *testing.T, ref *fakeController, tagPrefix string, first, last int) (*Client, func(flags ...string) (int, string, string)) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	refSrv := httptest.NewServer(ref)
	t.Cleanup(refSrv.Close)
	target := importTarget(t, tagPrefix, first, last)
	return target, func(flags ...string) (int, string, string) {
		return runCLI(append([]string{"import", "--from", refSrv.URL, "--from-token", "ref-token",
			"--server", target.Server, "--token", importAdminToken}, flags...)...)
	}
}

// importTarget serves svcbridge's API on a fresh SQLite store, running
// with the tag prefix and the bridge ports (first to last).
func importTarget(t *testing.T, tagPrefix string, first, last int) *Client {
	t.Helper()
	admin, err := auth.NewStatic(auth.StaticToken{Name: "admin", Role: string(auth.Admin), Token: importAdminToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Options{Store: storetest.Open(t, store.SQLite), Reconciler: nopReconciler{},
		ControlPlane: service.ControlPlaneRemote, BridgePorts: store.PortRange{First: first, Last: last}, BridgePortsRaw: fmt.Sprintf("%d-%d", first, last),
		Tags: service.TagRule{Prefix: tagPrefix}, Auth: admin}))
	t.Cleanup(srv.Close)
	return &Client{Server: srv.URL, Token: importAdminToken}
}

// fakeController answers the reference controller's three reads from its
// state, which a test may change (the reference in use meanwhile); it
// counts what it is asked.
type fakeController struct {
	requests      atomic.Int32
	mu            sync.Mutex
	agents        []importer.SourceAgent
	microservices []importer.SourceMicroservice
	services      []wire.Service
}

// newFakeController holds a hub, an edge agent tagged for checkout, and
// checkout's service on bridge port 10030.
func newFakeController() *fakeController {
	return &fakeController{
		agents: []importer.SourceAgent{
			{UUID: "7c1d0c4e-0000-4000-8000-000000000001", Name: "hub", Host: "hub.example.com", IsSystem: true, RouterMode: "interior",
				UpstreamRouters: []string{}, Tags: []string{}},
			{UUID: "7c1d0c4e-0000-4000-8000-000000000002", Name: "plant-a", Host: "10.0.0.5", RouterMode: "edge",
				UpstreamRouters: []string{"default-router"}, Tags: []string{"service.datasance.com/tag: checkout"}},
		},
		microservices: []importer.SourceMicroservice{},
		services: []wire.Service{{Name: "checkout", Type: "external", Resource: "checkout.example.com", TargetPort: 443,
			DefaultBridge: "default-router", BridgePort: 10030, Tags: []string{"checkout"}, ProvisioningStatus: "ready"}},
	}
}

func (f *fakeController) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	var answer any
	switch r.URL.Path {
	case "/api/v3/iofog-list":
		answer = map[string]any{"fogs": f.agents}
	case "/api/v3/microservices":
		answer = map[string]any{"microservices": f.microservices}
	case "/api/v3/services":
		answer = f.services
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

func TestImportFollowsTheServersSettings(t *testing.T) {
	ref := newFakeController()
	// A server that kept the reference's tag prefix, with its own ports.
	target, imp := importBetween(t, ref, "service.datasance.com/tag", 20000, 20099)
	ctx := context.Background()
	agents := func() []Agent {
		t.Helper()
		list, err := target.ListAgents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	t.Run("settings other than the server's are refused, with the fix", func(t *testing.T) {
		const refusal = "error: refusing to import, nothing was written: "
		for _, tc := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--tag-prefix", "service.iofog.org/tag"}, refusal + "--tag-prefix is service.iofog.org/tag, but svcbridge at " + target.Server +
				" runs with SERVICE_ANNOTATION_TAG=service.datasance.com/tag: the agent tags service.datasance.com/tag: T would become " +
				"service.iofog.org/tag: T and select no service there. Leave --tag-prefix out (the import then follows the server's), " +
				"or run svcbridge with SERVICE_ANNOTATION_TAG=service.iofog.org/tag\n"},
			{[]string{"--bridge-ports-range", "10024-65535"}, refusal + "--bridge-ports-range is 10024-65535, but svcbridge at " + target.Server +
				" runs with BRIDGE_PORTS_RANGE=20000-20099: the plan would keep and move bridge ports by a range the server does not have. " +
				"Leave --bridge-ports-range out (the import then follows the server's), or run svcbridge with BRIDGE_PORTS_RANGE=10024-65535\n"},
			{[]string{"--bridge-ports-range", "20000"}, "error: --bridge-ports-range: \"20000\" is not a port range such as 10024-65535\n"},
		} {
			// A dry run is refused alike.
			for _, dry := range [][]string{{"--dry-run"}, nil} {
				code, stdout, stderr := imp(append(slices.Clone(tc.flags), dry...)...)
				if code != ExitOther || stdout != "" || stderr != tc.want {
					t.Errorf("import %v: exit %d\nstdout: %s\nstderr: %s\nwant:   %s", append(tc.flags, dry...), code, stdout, stderr, tc.want)
				}
			}
		}
	})

	t.Run("refused before the controller is read or anything written", func(t *testing.T) {
		if n := ref.requests.Load(); n != 0 {
			t.Errorf("the controller got %d requests", n)
		}
		if a := agents(); len(a) != 0 {
			t.Errorf("svcbridge holds %d agents", len(a))
		}
	})

	t.Run("a dry run plans with the server's settings", func(t *testing.T) {
		code, stdout, stderr := imp("--dry-run")
		for _, line := range []string{
			"note: agent tags service.datasance.com/tag: T are kept as they are (svcbridge's SERVICE_ANNOTATION_TAG is service.datasance.com/tag)",
			"agent/hub: create", "agent/plant-a: create",
			"service/checkout: create, bridgePort 10030 -> 20099 (outside BRIDGE_PORTS_RANGE 20000-20099)",
		} {
			if !slices.Contains(strings.Split(stdout, "\n"), line) {
				t.Errorf("the dry run lacks %q: exit %d\n%s%s", line, code, stdout, stderr)
			}
		}
		if code != ExitOK || len(agents()) != 0 {
			t.Errorf("dry run: exit %d, %d agents after it", code, len(agents()))
		}
	})

	t.Run("the import, its flags agreeing, writes tags that select the service", func(t *testing.T) {
		code, stdout, stderr := imp("--tag-prefix", "service.datasance.com/tag", "--bridge-ports-range", "20000-20099")
		if code != ExitOK || !strings.Contains(stdout, "service/checkout: created, bridgePort 10030 -> 20099 (outside BRIDGE_PORTS_RANGE 20000-20099)\n") {
			t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
		}
		var preview wire.DistributionPreview
		if _, err := target.getJSON(ctx, "/api/v3/services/checkout/distribution", &preview); err != nil {
			t.Fatal(err)
		}
		var listening []string
		for _, a := range preview.Agents {
			if a.WouldListen {
				listening = append(listening, a.AgentName)
			}
		}
		if !slices.Equal(listening, []string{"hub", "plant-a"}) {
			t.Errorf("agents that would listen for checkout: %v, want hub and plant-a", listening)
		}
	})
}

// What the reference accepts and svcbridge refuses: an agent named
// Edge_5, one on host edge_6.lan, a 70-character service name, a service
// on an agent without a router; and what needs them.
const (
	refHub   = "5b0e7a52-0000-4000-8000-000000000001"
	refEdge5 = "5b0e7a52-0000-4000-8000-000000000005"
	refEdge6 = "5b0e7a52-0000-4000-8000-000000000006"
	refLab   = "5b0e7a52-0000-4000-8000-000000000009"
	refSensM = "5b0e7a52-0000-4000-8000-0000000000a1"
	refWebM  = "5b0e7a52-0000-4000-8000-0000000000a2"
)

var longName = strings.Repeat("a", 70)

func refusingController() *fakeController {
	external := func(name string, port int) wire.Service {
		return wire.Service{Name: name, Type: "external", Resource: name[:min(len(name), 20)] + ".example.com", TargetPort: 443,
			DefaultBridge: "default-router", BridgePort: port, Tags: []string{}}
	}
	on := func(name, typ, resource string, port int) wire.Service {
		s := external(name, port)
		s.Type, s.Resource, s.TargetPort = typ, resource, 8080
		return s
	}
	return &fakeController{
		agents: []importer.SourceAgent{
			{UUID: refHub, Name: "hub", Host: "hub.example.com", IsSystem: true, RouterMode: "interior"},
			{UUID: refEdge5, Name: "Edge_5", Host: "10.0.0.5", RouterMode: "edge", UpstreamRouters: []string{"default-router"},
				Tags: []string{"service.datasance.com/tag: sensor"}},
			{UUID: refEdge6, Name: "edge-6", Host: "edge_6.lan", RouterMode: "edge", UpstreamRouters: []string{"default-router"}},
			{UUID: refLab, Name: "lab", Host: "10.0.0.9", RouterMode: "none"},
		},
		microservices: []importer.SourceMicroservice{
			{UUID: refSensM, Name: "sensor", Application: "orders", AgentUUID: refEdge5},
			{UUID: refWebM, Name: "web", Application: "orders", AgentUUID: refHub},
		},
		services: []wire.Service{
			on("sensor", "microservice", refSensM, 10024), on("web", "microservice", refWebM, 10025),
			external(longName, 10026), on("ssh", "agent", refEdge6, 10027), on("lab-ssh", "agent", refLab, 10028),
			// billing and zeta: the reference's race handed both 10029.
			external("billing", 10029), external("zeta", 10029),
		},
	}
}

// importLines are the object lines of an import's output, each as
// "kind/name: outcome, detail" with what differs between a dry run and the
// real run made alike: "created" is "create", no token, and a refusal
// without the answer's status.
func importLines(stdout string) map[string]string {
	token := regexp.MustCompile(` \(agent token[^)]*\)`)
	status := regexp.MustCompile(` \(\d{3} \w+\)$`)
	out := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		object, outcome, ok := strings.Cut(line, ": ")
		if !ok || !strings.Contains(object, "/") {
			continue
		}
		outcome = strings.Replace(token.ReplaceAllString(outcome, ""), "created", "create", 1)
		out[object] = status.ReplaceAllString(outcome, "")
	}
	return out
}

func TestImportDryRunPredictsTheRun(t *testing.T) {
	ref := refusingController()
	target, imp := importBetween(t, ref, "service.iofog.org/tag", 10024, 10099)
	ctx := context.Background()

	var dry map[string]string
	t.Run("a dry run reports what svcbridge refuses, and what that leaves out, by name", func(t *testing.T) {
		code, stdout, stderr := imp("--dry-run")
		dry = importLines(stdout)
		want := map[string]string{
			"agent/Edge_5":               `refused, Invalid format for field 'name': "Edge_5" must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`,
			"agent/edge-6":               `refused, Invalid format for field 'host': "edge_6.lan" must be a DNS name or an IP address`,
			"agent/hub":                  "create",
			"agent/lab":                  "create",
			"microservice/orders/sensor": "not imported because agent Edge_5 was refused",
			"microservice/orders/web":    "create",
			"service/" + longName:        "refused, Invalid length for field 'name': must be at most 63 characters",
			"service/billing":            "create, bridgePort 10029 kept",
			// Checked by svcbridge's rules: lab does not exist yet.
			"service/lab-ssh": "refused, Agent lab has routerMode none: a TCP bridge service requires a router on the agent",
			"service/sensor":  "not imported because agent Edge_5 was refused",
			"service/ssh":     "not imported because agent edge-6 was refused",
			"service/web":     "create, bridgePort 10025 kept",
			"service/zeta":    "create, bridgePort 10029 -> 10099 (shared with billing)",
		}
		for object, line := range want {
			if dry[object] != line {
				t.Errorf("%s: %q\nwant     %q", object, dry[object], line)
			}
		}
		if code != ExitRejected || !strings.Contains(stdout, "dry run, nothing written: 6 to create, 0 unchanged, 0 skipped, 0 in conflict, 4 refused, 3 not imported, 0 failed\n") {
			t.Errorf("dry run: exit %d\n%s%s", code, stdout, stderr)
		}
		if strings.Contains(stdout, refEdge5) || strings.Contains(stdout, refEdge6) {
			t.Errorf("the dry run names an agent by its uuid:\n%s", stdout)
		}
		if agents, _ := target.ListAgents(ctx); len(agents) != 0 {
			t.Errorf("the dry run wrote %d agents", len(agents))
		}
	})

	t.Run("the real run does what the dry run said", func(t *testing.T) {
		code, stdout, stderr := imp()
		if got := importLines(stdout); !maps.Equal(got, dry) {
			t.Errorf("the real run:\n%s\nthe dry run said:\n%v", stdout, dry)
		}
		if code != ExitRejected || !strings.Contains(stdout, "6 created, 0 unchanged, 0 skipped, 0 in conflict, 4 refused, 3 not imported, 0 failed\n") {
			t.Errorf("import: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	renameFile := filepath.Join(t.TempDir(), "renames")
	if err := os.WriteFile(renameFile, []byte("# svcbridge wants DNS labels\n\nservice/"+longName+"=long-name  # too long\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "tokens")
	choices := []string{"--rename", "agent/Edge_5=edge-5", "--rename-file", renameFile, "--skip", "agent/edge-6", "--skip", "service/lab-ssh"}

	t.Run("renames and skips get the rest through", func(t *testing.T) {
		code, stdout, stderr := imp(append(slices.Clone(choices), "--dry-run", "--credentials-dir", creds)...)
		want := map[string]string{
			"agent/edge-6":               "skipped (--skip agent/edge-6)",
			"microservice/orders/sensor": "create",
			"service/long-name":          "create, bridgePort 10026 kept; renamed from " + longName,
			"service/lab-ssh":            "skipped (--skip service/lab-ssh)",
			"service/ssh":                "skipped because agent edge-6 is skipped",
			"service/sensor":             "create, bridgePort 10024 kept",
			"service/zeta":               "unchanged, bridgePort 10029 -> 10099 (shared with billing)",
		}
		got := importLines(stdout)
		for object, line := range want {
			if got[object] != line {
				t.Errorf("%s: %q\nwant     %q", object, got[object], line)
			}
		}
		if code != ExitOK || !strings.Contains(stdout, "agent/edge-5: create (agent token to be written to "+filepath.Join(creds, "edge-5.token")+"), renamed from Edge_5\n") {
			t.Errorf("dry run: exit %d\n%s%s", code, stdout, stderr)
		}
		if _, err := os.Stat(creds); err == nil {
			t.Errorf("the dry run made %s", creds)
		}
	})

	t.Run("with its agent tokens written to files", func(t *testing.T) {
		code, stdout, stderr := imp(append(slices.Clone(choices), "--credentials-dir", creds)...)
		file := filepath.Join(creds, "edge-5.token")
		if code != ExitOK || !strings.Contains(stdout, "agent/edge-5: created (agent token written to "+file+"), renamed from Edge_5\n") ||
			!strings.Contains(stdout, "4 created, 6 unchanged, 3 skipped, 0 in conflict, 0 refused, 0 not imported, 0 failed\n") {
			t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
		}
		dir, err := os.Stat(creds)
		if err != nil || dir.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a directory of mode 0700", creds, dir.Mode(), err)
		}
		fi, err := os.Stat(file)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", file, fi.Mode(), err)
		}
		if entries, _ := os.ReadDir(creds); len(entries) != 1 {
			t.Errorf("%s holds %d files, want edge-5's only (the others' agents were created before)", creds, len(entries))
		}
		b, _ := os.ReadFile(file)
		agentToken := strings.TrimSpace(string(b))
		if strings.Contains(stdout+stderr, agentToken) {
			t.Errorf("the token written to the file was printed too")
		}
		// The file is edge-5's credential: the router side's --token-file.
		agent := &Client{Server: target.Server, Token: agentToken}
		var router RouterConfig
		if _, err := agent.getJSON(ctx, "/api/v3/agent/router", &router); err != nil {
			t.Errorf("GET /api/v3/agent/router with the token of %s: %v", file, err)
		}
	})

	t.Run("a second run with the same flags changes nothing", func(t *testing.T) {
		code, stdout, stderr := imp(append(slices.Clone(choices), "--credentials-dir", creds)...)
		if code != ExitOK || !strings.Contains(stdout, "0 created, 10 unchanged, 3 skipped, 0 in conflict, 0 refused, 0 not imported, 0 failed\n") ||
			!strings.Contains(stdout, "agent/edge-5: unchanged, renamed from Edge_5\n") {
			t.Errorf("second import: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("without the rename, the conflict says which one", func(t *testing.T) {
		code, stdout, _ := imp("--skip", "agent/edge-6", "--dry-run")
		if code != ExitRejected || !strings.Contains(stdout, "agent/Edge_5: conflict, svcbridge's agent edge-5 has its uuid: "+
			"if an earlier import renamed it, import with --rename agent/Edge_5=edge-5\n") {
			t.Errorf("import without --rename: exit %d\n%s", code, stdout)
		}
	})

	t.Run("a second import after the reference handed out its next port moves nothing again", func(t *testing.T) {
		// The reference gives a new service the lowest port its services
		// leave free: 10030. zeta moved to the top of the range, so the
		// new one keeps its port, and zeta stays.
		ref.mu.Lock()
		ref.services = append(ref.services, wire.Service{Name: "audit", Type: "external", Resource: "audit.example.com", TargetPort: 443,
			DefaultBridge: "default-router", BridgePort: 10030, Tags: []string{}})
		ref.mu.Unlock()
		code, stdout, stderr := imp(choices...)
		got := importLines(stdout)
		if code != ExitOK || got["service/audit"] != "create, bridgePort 10030 kept" ||
			got["service/zeta"] != "unchanged, bridgePort 10029 -> 10099 (shared with billing)" ||
			!strings.Contains(stdout, "1 created, 10 unchanged, 3 skipped, 0 in conflict, 0 refused, 0 not imported, 0 failed\n") {
			t.Errorf("import: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("renames and skips of what the controller lacks are refused", func(t *testing.T) {
		code, stdout, stderr := imp("--rename", "agent/Edge_6=edge-6", "--skip", "microservice/orders/gone", "--dry-run")
		want := "error: refusing to import, nothing was written: --rename agent/Edge_6: the controller has no agent Edge_6; " +
			"--skip microservice/orders/gone: the controller has no microservice orders/gone\n"
		if code != ExitOther || stdout != "" || stderr != want {
			t.Errorf("import: exit %d\nstdout: %s\nstderr: %s\nwant:   %s", code, stdout, stderr, want)
		}
	})
}

func TestImportCredentialsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	d := credentialsDir(dir)
	mode := func(path string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if err := d.prepare(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("a dry run made the directory")
	}
	if err := d.prepare(false); err != nil || mode(dir) != 0o700 {
		t.Fatalf("prepare: %v, mode %v", err, mode(dir))
	}

	shown, err := d.save("hub", "t1")
	b, _ := os.ReadFile(d.path("hub"))
	if err != nil || shown != "(agent token written to "+d.path("hub")+")" || string(b) != "t1\n" || mode(d.path("hub")) != 0o600 {
		t.Errorf("save: %q %v; file %q mode %v", shown, err, b, mode(d.path("hub")))
	}
	// An older file of that name: replaced, readable by its owner only.
	if err := os.WriteFile(d.path("edge"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shown, err = d.save("edge", "t2")
	b, _ = os.ReadFile(d.path("edge"))
	if err != nil || shown != "(agent token written to "+d.path("edge")+", replacing the file there)" || string(b) != "t2\n" || mode(d.path("edge")) != 0o600 {
		t.Errorf("save over an old file: %q %v; file %q mode %v", shown, err, b, mode(d.path("edge")))
	}
	// A token that cannot be written is shown, not lost.
	if err := os.Mkdir(d.path("lab"), 0o700); err != nil {
		t.Fatal(err)
	}
	if shown, err := d.save("lab", "t3"); err == nil || !strings.HasPrefix(shown, "(agent token, shown once: t3; agent lab: writing its token to ") {
		t.Errorf("save to a directory: %q %v", shown, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%s holds %d entries, want hub.token, edge.token and lab.token: no temporary file left", dir, len(entries))
	}

	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	want := "refusing to import, nothing was written: --credentials-dir " + file + ": not a directory"
	for _, dry := range []bool{true, false} {
		if err := credentialsDir(file).prepare(dry); err == nil || err.Error() != want {
			t.Errorf("prepare(%v) of a file: %v", dry, err)
		}
	}
}

// A controller whose hub is Kubernetes' has no system agent: its agents'
// default-router is left out, which their lines say, and svcbridge, on
// the remote control plane, has no default router for the services.
func TestImportWithoutTheSourcesHub(t *testing.T) {
	ref := newFakeController()
	ref.agents = ref.agents[1:]
	_, imp := importBetween(t, ref, "service.iofog.org/tag", 20000, 20099)
	code, stdout, _ := imp("--dry-run")
	got := importLines(stdout)
	if code != ExitRejected ||
		got["agent/plant-a"] != "create, its upstream router default-router is no agent of the source (a Kubernetes hub) and is left out" ||
		got["service/checkout"] != "refused, Default router not found: set defaultRouter on one interior agent" {
		t.Errorf("dry run: exit %d\n%s", code, stdout)
	}
}
