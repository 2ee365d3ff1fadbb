package systemtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/primitives/timestamp"

	"svcbridge/deploy/compose"
	"svcbridge/pgtest"
	"svcbridge/porttest"
	"svcbridge/workflows"
)

// The production rehearsal: docker-compose.yml's topology without
// containers. Its Temporal release is built from the Go module proxy
// (scripts/temporal-bins.sh: the temporal-server and temporal-sql-tool the
// images ship), its steps and settings are read from the file itself, and
// only what must change to run on one host without containers does: host
// names of containers become the local PostgreSQL and 127.0.0.1, fixed
// ports become free ones, fixed database names fresh ones, the database
// user the local trusted one, and paths inside images the files they come
// from.

const (
	composeFile = "../docker-compose.yml"
	// composeAdminToken is the example token whose hash
	// deploy/compose/tokens.yaml holds (its comment says so).
	composeAdminToken = "compose-admin-token-change-me-0001"
	// rehearsalAPIs: the file starts one api; its header says how to run
	// two (`--scale svcbridge-api=2`), the production shape.
	rehearsalAPIs = 2
	// rehearsalServices created by rehearsalClients at once.
	rehearsalServices = 40
	rehearsalClients  = 8
)

// quietLogger keeps the SDK's connection attempts out of the test's log.
var quietLogger = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))

// temporalBinsEnv overrides where scripts/temporal-bins.sh puts its builds.
const temporalBinsEnv = "SVCBRIDGE_TEMPORAL_BIN"

// temporalBins is the directory of the binaries of the file's Temporal
// release, as scripts/temporal-bins.sh builds them; the test skips (fails
// in CI) without them.
func temporalBins(t *testing.T, f compose.File) string {
	t.Helper()
	_, tag, ok := strings.Cut(f.Services["temporal"].Image, ":")
	if !ok {
		t.Fatalf("docker-compose.yml: the temporal service's image %q has no tag", f.Services["temporal"].Image)
	}
	base := os.Getenv(temporalBinsEnv)
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "svcbridge", "temporal-bin")
	}
	dir := filepath.Join(base, "v"+tag)
	for _, b := range []string{"temporal-server", "temporal-sql-tool"} {
		out, err := exec.Command(filepath.Join(dir, b), "--version").Output()
		if err == nil && strings.HasSuffix(strings.TrimSpace(string(out)), "version "+tag) {
			continue
		}
		msg := fmt.Sprintf("no %s %s in %s (%v %s): build it with scripts/temporal-bins.sh", b, tag, dir, err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// onHost is where the rehearsal runs what the file runs in containers.
type onHost struct {
	postgres  *url.URL          // the local server: host, port and trusted user
	databases map[string]string // the file's database names -> fresh ones
	temporal  string            // the frontend's host:port
	bins      string            // temporalBins
}

// mountedFiles maps the paths of a service's bind mounts inside its
// container to the files they come from (paths in the file are relative to
// its directory, the repo's root).
func mountedFiles(s compose.Service) map[string]string {
	mounts := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[0], ".") {
			mounts[parts[1]] = filepath.Join(filepath.Dir(composeFile), parts[0])
		}
	}
	return mounts
}

// svcbridgeEnv is a svcbridge service's environment from the file, with
// listen addresses given per process (replicas of a service share none
// here) and paths of mounted files made the files' own. (start adds it to
// the test's own environment, which sets none of svcbridge's settings when
// scripts/test.sh runs it; the file's values win.)
func (h onHost) svcbridgeEnv(t *testing.T, s compose.Service, listen map[string]string) []string {
	t.Helper()
	mounts := mountedFiles(s)
	var env []string
	for k, v := range s.Environment {
		switch {
		case k == "DATABASE_URL":
			u, err := url.Parse(v)
			if err != nil {
				t.Fatalf("DATABASE_URL: %v", err)
			}
			db, ok := h.databases[strings.TrimPrefix(u.Path, "/")]
			if !ok {
				t.Fatalf("DATABASE_URL names database %s, which the rehearsal does not know", u.Path)
			}
			u.Host, u.User, u.Path = h.postgres.Host, h.postgres.User, "/"+db
			v = u.String()
		case k == "TEMPORAL_ADDRESS":
			v = h.temporal
		case listen[k] != "":
			v = listen[k]
		case mounts[v] != "":
			v = mounts[v]
		}
		env = append(env, k+"="+v)
	}
	for k := range listen {
		if _, ok := s.Environment[k]; !ok {
			t.Fatalf("the file sets no %s", k)
		}
	}
	return env
}

// temporalEnv is the temporal service's environment, which the server's
// embedded configuration template reads (`temporal-server start` without a
// config file, as the image's entrypoint runs it).
func (h onHost) temporalEnv(t *testing.T, s compose.Service, ports map[string]int) []string {
	t.Helper()
	env := map[string]string{}
	mounts := mountedFiles(s)
	for k, v := range s.Environment {
		if mounts[v] != "" {
			v = mounts[v]
		}
		env[k] = v
	}
	for k, want := range map[string]string{"POSTGRES_SEEDS": "postgres", "BIND_ON_IP": "0.0.0.0"} {
		if env[k] != want {
			t.Fatalf("temporal: %s=%q; the rehearsal knows %q", k, env[k], want)
		}
	}
	env["POSTGRES_SEEDS"], env["DB_PORT"] = h.postgres.Hostname(), h.postgres.Port()
	env["POSTGRES_USER"] = h.postgres.User.Username()
	// 0.0.0.0 makes the image's entrypoint derive the broadcast address
	// from the container's host name; here the host's loopback is the
	// server's whole network.
	env["BIND_ON_IP"] = "127.0.0.1"
	// The file leaves the template's database names (temporal,
	// temporal_visibility): name the fresh ones.
	env["DBNAME"], env["VISIBILITY_DBNAME"] = h.databases["temporal"], h.databases["temporal_visibility"]
	for k, p := range ports {
		env[k] = strconv.Itoa(p)
	}
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// shellScript returns the lines of a service's `/bin/sh -ec` script.
func shellScript(t *testing.T, name string, s compose.Service) []string {
	t.Helper()
	if !slices.Equal(s.Entrypoint, []string{"/bin/sh", "-ec"}) || len(s.Command) != 1 {
		t.Fatalf("%s: entrypoint %q command %q, want a /bin/sh -ec script", name, s.Entrypoint, s.Command)
	}
	var lines []string
	for _, l := range strings.Split(s.Command[0], "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// setUpSchema runs the temporal-schema service's script with the built
// temporal-sql-tool: each line a plain command (anything a shell would
// interpret fails here rather than run differently).
func (h onHost) setUpSchema(t *testing.T, s compose.Service) {
	t.Helper()
	env := []string{}
	for k, v := range s.Environment {
		switch k {
		case "SQL_HOST":
			v = h.postgres.Hostname()
		case "SQL_PORT":
			v = h.postgres.Port()
		case "SQL_USER":
			v = h.postgres.User.Username()
		}
		env = append(env, k+"="+v)
	}
	for _, line := range shellScript(t, "temporal-schema", s) {
		if strings.ContainsAny(line, "$|&;<>`'\"\\") {
			t.Fatalf("temporal-schema: %q is more than a plain command line", line)
		}
		args := strings.Fields(line)
		if args[0] != "temporal-sql-tool" {
			t.Fatalf("temporal-schema: %q runs %s, not temporal-sql-tool", line, args[0])
		}
		for i := 1; i < len(args); i++ {
			switch {
			case args[i-1] == "--db":
				db, ok := h.databases[args[i]]
				if !ok {
					t.Fatalf("temporal-schema: %q names database %s, which the rehearsal does not know", line, args[i])
				}
				args[i] = db
			case strings.HasPrefix(args[i], "/etc/temporal/schema/"): // the admin-tools image's copy of the module's schema/
				args[i] = filepath.Join(h.bins, "schema", strings.TrimPrefix(args[i], "/etc/temporal/schema/"))
			}
		}
		cmd := exec.Command(filepath.Join(h.bins, args[0]), args[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("temporal-schema: %s: %v\n%s", line, err, out)
		}
	}
}

// operatorCommand reads the flags of the temporal CLI command of the
// script that starts with prefix ("temporal operator namespace create").
func operatorCommand(t *testing.T, lines []string, prefix string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet(prefix, pflag.ContinueOnError)
	fs.StringP("namespace", "n", "", "")
	fs.String("retention", "", "")
	fs.String("address", "", "") // the frontend: the rehearsal's
	fs.StringArray("name", nil, "")
	fs.StringArray("type", nil, "")
	for _, l := range lines {
		i := strings.Index(l, prefix)
		if i < 0 {
			continue
		}
		cmd, _, _ := strings.Cut(l[i+len(prefix):], "||")
		if err := fs.Parse(strings.Fields(cmd)); err != nil {
			t.Fatalf("temporal-namespace: %q: %v", l, err)
		}
		return fs
	}
	t.Fatalf("temporal-namespace: no %q in its script", prefix)
	return nil
}

// createNamespace does what the temporal-namespace service's script does,
// with the Temporal API calls its CLI commands make.
func createNamespace(t *testing.T, frontend string, s compose.Service) (namespace string) {
	t.Helper()
	lines := shellScript(t, "temporal-namespace", s)
	ctx := context.Background()

	create := operatorCommand(t, lines, "temporal operator namespace create")
	namespace, _ = create.GetString("namespace")
	rawRetention, _ := create.GetString("retention")
	retention, err := time.ParseDuration(rawRetention)
	if err != nil || namespace == "" {
		t.Fatalf("temporal-namespace: namespace %q retention %q: %v", namespace, rawRetention, err)
	}
	nc, err := client.NewNamespaceClient(client.Options{HostPort: frontend, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: timestamp.DurationPtr(retention)}); err != nil {
		t.Fatalf("register namespace %s: %v", namespace, err)
	}

	add := operatorCommand(t, lines, "temporal operator search-attribute create")
	names, _ := add.GetStringArray("name")
	types, _ := add.GetStringArray("type")
	if ns, _ := add.GetString("namespace"); ns != namespace || len(names) != len(types) {
		t.Fatalf("temporal-namespace: search attributes %v %v in namespace %s, want pairs in %s", names, types, ns, namespace)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for i, n := range names {
		v, ok := enumspb.IndexedValueType_value["INDEXED_VALUE_TYPE_"+strings.ToUpper(types[i])]
		if !ok {
			t.Fatalf("temporal-namespace: search attribute %s of unknown type %s", n, types[i])
		}
		attrs[n] = enumspb.IndexedValueType(v)
	}
	c := temporalClient(t, frontend, namespace)
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: attrs}); err != nil {
		t.Fatalf("add search attributes %v: %v", attrs, err)
	}
	// What svcbridge's workflows set is there before any svcbridge process
	// runs (the worker would add it too, where it may).
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range workflows.SearchAttributes {
		if list.GetCustomAttributes()[n] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("the Compose namespace step leaves %s a %v, want a Keyword", n, list.GetCustomAttributes()[n])
		}
	}
	return namespace
}

// rehearsalAPI calls one api process with the Compose admin token; safe
// for goroutines (errors, not test failures).
type rehearsalAPI struct{ url string }

func (a rehearsalAPI) call(method, path string, body, into any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+composeAdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && into != nil && resp.StatusCode < 300 {
		err = json.Unmarshal(out, into)
	}
	if err == nil && resp.StatusCode >= 300 {
		err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return resp.StatusCode, err
}

// connectionPeaks samples, until stop, how many connections each database
// holds, and returns the most seen.
func connectionPeaks(t *testing.T, admin string, dbs []string) (stop func() map[string]int) {
	t.Helper()
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	peaks := map[string]int{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			rows, err := db.Query(`SELECT datname, count(*) FROM pg_stat_activity WHERE datname = ANY($1) GROUP BY datname`, pq.Array(dbs))
			if err == nil {
				for rows.Next() {
					var name string
					var n int
					if rows.Scan(&name, &n) == nil {
						peaks[name] = max(peaks[name], n)
					}
				}
				rows.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() map[string]int {
		once.Do(func() { close(done); <-finished; db.Close() })
		return peaks
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestComposeRehearsal: PostgreSQL, Temporal's schema set up as the
// temporal-schema service does, the Temporal server configured as the
// temporal service, the namespace and search attributes of the
// temporal-namespace service, `svcbridge migrate`, two apis and the file's
// workers, each with the file's environment. A burst of creates through
// both apis, one worker killed with SIGKILL in the middle (and started
// again, as the file's restart policy does): every service becomes ready
// and the hub's router holds exactly them; no process held more
// connections than the file's budget gives it.
func TestComposeRehearsal(t *testing.T) {
	file, err := compose.Load(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	bins := temporalBins(t, file)
	dbURL := pgtest.NewDB(t)
	pg, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	adminURL := *pg
	adminURL.Path = "/postgres"
	fresh := strings.TrimPrefix(pg.Path, "/")
	h := onHost{postgres: pg, bins: bins, databases: map[string]string{
		"svcbridge": fresh, "temporal": fresh + "_temporal", "temporal_visibility": fresh + "_temporal_visibility"}}
	admin, err := sql.Open("postgres", adminURL.String())
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() {
		for _, db := range []string{h.databases["temporal"], h.databases["temporal_visibility"]} {
			admin.Exec(`DROP DATABASE IF EXISTS ` + db + ` WITH (FORCE)`)
		}
		admin.Close()
	})
	budget, err := file.Connections()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := os.ReadFile("../deploy/compose/tokens.yaml")
	sum := sha256.Sum256([]byte(composeAdminToken))
	if err != nil || !bytes.Contains(tokens, []byte(hex.EncodeToString(sum[:]))) {
		t.Fatalf("deploy/compose/tokens.yaml does not hold the example token's hash (%v)", err)
	}
	stopSampling := connectionPeaks(t, adminURL.String(), []string{h.databases["svcbridge"], h.databases["temporal"], h.databases["temporal_visibility"]})
	began := time.Now()

	h.setUpSchema(t, file.Services["temporal-schema"])
	t.Logf("schema set up in %v", time.Since(began).Round(time.Millisecond))

	ports := map[string]int{}
	for _, k := range []string{"FRONTEND_GRPC_PORT", "FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT",
		"HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT",
		"WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT"} {
		ports[k] = porttest.Free(t)
	}
	h.temporal = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports["FRONTEND_GRPC_PORT"]))
	server := exec.Command(filepath.Join(bins, "temporal-server"), "start") // the image's entrypoint
	server.Env = h.temporalEnv(t, file.Services["temporal"], ports)
	serverLog, err := os.Create(filepath.Join(t.TempDir(), "temporal-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	server.Stdout, server.Stderr = serverLog, serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	var serverErr error
	serverExited := make(chan struct{})
	go func() { serverErr = server.Wait(); close(serverExited) }()
	t.Cleanup(func() {
		server.Process.Kill()
		<-serverExited
		if out, _ := os.ReadFile(serverLog.Name()); t.Failed() {
			t.Logf("temporal-server's output (tail):\n%s", out[max(0, len(out)-4000):])
		}
		serverLog.Close()
	})
	sys := &system{t: t}
	sys.waitFor("the Temporal frontend", 60*time.Second, func() (bool, string) {
		select {
		case <-serverExited:
			t.Fatalf("temporal-server exited: %v", serverErr)
		default:
		}
		c, err := client.Dial(client.Options{HostPort: h.temporal, Logger: quietLogger})
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("Temporal server up %v after the start", time.Since(began).Round(time.Millisecond))
	namespace := createNamespace(t, h.temporal, file.Services["temporal-namespace"])

	migrate := file.Services["svcbridge-migrate"]
	m := start(t, h.svcbridgeEnv(t, migrate, nil), migrate.Command...)
	select {
	case err := <-m.done:
		if err != nil {
			t.Fatalf("svcbridge %v: %v\n%s", migrate.Command, err, m.out())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("svcbridge %v did not finish in 60s:\n%s", migrate.Command, m.out())
	}

	apiSvc, workerSvc := file.Services["svcbridge-api"], file.Services["svcbridge-worker"]
	var apis []rehearsalAPI
	for range rehearsalAPIs {
		addr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
		p := start(t, h.svcbridgeEnv(t, apiSvc, map[string]string{"LISTEN": addr}), apiSvc.Command...)
		waitHTTP(t, "http://"+addr+"/readyz", p)
		apis = append(apis, rehearsalAPI{"http://" + addr})
	}
	startWorker := func() *proc {
		addr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
		p := start(t, h.svcbridgeEnv(t, workerSvc, map[string]string{"METRICS_LISTEN": addr}), workerSvc.Command...)
		waitHTTP(t, "http://"+addr+"/healthz", p)
		return p
	}
	var workers []*proc
	for range workerSvc.Replicas() {
		workers = append(workers, startWorker())
	}
	queue := workerSvc.Environment["TASK_QUEUE"]
	tc := temporalClient(t, h.temporal, namespace)
	sys.waitFor(fmt.Sprintf("%d workers polling %s", len(workers), queue), 60*time.Second, func() (bool, string) {
		resp, err := tc.DescribeTaskQueue(context.Background(), queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err != nil {
			return false, err.Error()
		}
		return len(resp.GetPollers()) >= len(workers), fmt.Sprintf("%d pollers", len(resp.GetPollers()))
	})
	t.Logf("%d apis and %d workers up %v after the start", len(apis), len(workers), time.Since(began).Round(time.Millisecond))

	if _, err := apis[0].call("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior",
		"defaultRouter": true, "host": "hub.example.com"}, nil); err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("svc-%02d", i) }
	ready := func(api rehearsalAPI, i int) (bool, string) {
		var svc serviceOut
		if _, err := api.call("GET", "/api/v3/services/"+name(i), nil, &svc); err != nil {
			return false, err.Error()
		}
		return svc.ProvisioningStatus == "ready" && svc.ObservedGeneration == svc.Generation,
			fmt.Sprintf("%s: %s gen %d/%d", name(i), svc.ProvisioningStatus, svc.ObservedGeneration, svc.Generation)
	}

	// The burst; as soon as a service is done, with others in flight, the
	// first worker dies without warning.
	var created atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, rehearsalServices)
	for c := range rehearsalClients {
		wg.Go(func() {
			for i := c; i < rehearsalServices; i += rehearsalClients {
				if _, err := apis[i%len(apis)].call("POST", "/api/v3/services", map[string]any{"name": name(i),
					"type": "external", "resource": "203.0.113.10", "targetPort": 2000 + i}, nil); err != nil {
					errs <- err
					return
				}
				created.Add(1)
			}
		})
	}
	readyNow := func() (int, error) {
		var listed []serviceOut
		if _, err := apis[0].call("GET", "/api/v3/services", nil, &listed); err != nil {
			return 0, err
		}
		n := 0
		for _, svc := range listed {
			if svc.ProvisioningStatus == "ready" && svc.ObservedGeneration == svc.Generation {
				n++
			}
		}
		return n, nil
	}
	sys.waitFor("a service ready", 60*time.Second, func() (bool, string) {
		n, err := readyNow()
		return n > 0, fmt.Sprint(err)
	})
	workers[0].cmd.Process.Signal(syscall.SIGKILL)
	<-workers[0].done
	killedAt := created.Load()
	done, err := readyNow()
	if err != nil {
		t.Fatal(err)
	}
	if done >= rehearsalServices {
		t.Errorf("every service was ready when the worker died: the kill hit no work in flight")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	workers[0] = startWorker() // restart: unless-stopped
	t.Logf("worker killed with %d of %d services created and %d ready; started again", killedAt, rehearsalServices, done)

	for i := range rehearsalServices {
		sys.waitFor(name(i)+" ready", 60*time.Second, func() (bool, string) { return ready(apis[i%len(apis)], i) })
	}
	sys.waitFor("the hub to hold exactly the services", 30*time.Second, func() (bool, string) {
		var doc struct {
			Bridges struct {
				TCPListeners  map[string]json.RawMessage `json:"tcpListeners"`
				TCPConnectors map[string]json.RawMessage `json:"tcpConnectors"`
			} `json:"bridges"`
		}
		if _, err := apis[1].call("GET", "/api/v3/agents/hub/router", nil, &doc); err != nil {
			return false, err.Error()
		}
		l, c := doc.Bridges.TCPListeners, doc.Bridges.TCPConnectors
		for i := range rehearsalServices {
			if l[name(i)+"-listener"] == nil || c[name(i)+"-connector"] == nil {
				return false, name(i) + " missing"
			}
		}
		return len(l) == rehearsalServices && len(c) == rehearsalServices, fmt.Sprintf("%d listeners, %d connectors", len(l), len(c))
	})
	t.Logf("all %d services ready and on the hub %v after the start", rehearsalServices, time.Since(began).Round(time.Millisecond))

	// The pools the budget counts bound what each process held.
	peaks := stopSampling()
	t.Logf("most connections held at once: svcbridge %d, temporal %d, temporal_visibility %d",
		peaks[h.databases["svcbridge"]], peaks[h.databases["temporal"]], peaks[h.databases["temporal_visibility"]])
	draw := func(service string) int {
		for _, d := range budget.Draws {
			if d.Service == service {
				return d.PerProcess
			}
		}
		t.Fatalf("the budget does not count %s", service)
		return 0
	}
	if got, limit := peaks[h.databases["temporal"]]+peaks[h.databases["temporal_visibility"]], draw("temporal"); got > limit {
		t.Errorf("the Temporal server held %d connections, more than the %d its pools allow in the budget", got, limit)
	}
	if got, limit := peaks[h.databases["svcbridge"]], len(apis)*draw("svcbridge-api")+len(workers)*draw("svcbridge-worker"); got > limit {
		t.Errorf("svcbridge's processes held %d connections, more than the %d of their pools", got, limit)
	}
}
