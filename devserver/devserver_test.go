package devserver

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	taskQueue   = "devserver-test"
	serviceName = "demo"

	// Environment of the child process in TestRestartKeepsWorkflows.
	envDescribeDir = "DEVSERVER_TEST_DESCRIBE_DIR"
	envDescribeID  = "DEVSERVER_TEST_DESCRIBE_ID"
)

var (
	serviceNameKey = temporal.NewSearchAttributeKeyKeyword(serviceNameAttr)
	statusKey      = temporal.NewSearchAttributeKeyKeyword(statusAttr)
)

func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// testLogger shows server warnings only with -v: shutdown is noisy.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	o.Logger = testLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("server up in %v: frontend %s, UI %q", time.Since(began).Round(time.Millisecond), s.FrontendAddress(), s.UIURL())
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendAddress(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// runGreet runs the greet workflow to completion under the given ID,
// tagged with svcbridge's search attributes.
func runGreet(t *testing.T, s *Server, id string) {
	t.Helper()
	c := dial(t, s)
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(serviceNameKey.ValueSet(serviceName), statusKey.ValueSet("ready")),
	}, "greet", serviceName)
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if got != "hello "+serviceName {
		t.Fatalf("workflow result = %q", got)
	}
}

// requireCompleted checks that the workflow is known to the server, has
// completed and still carries its search attribute.
func requireCompleted(t *testing.T, c client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	info := resp.GetWorkflowExecutionInfo()
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("status of %s = %v", id, st)
	}
	for name := range searchAttrs() {
		if _, ok := info.GetSearchAttributes().GetIndexedFields()[name]; !ok {
			t.Fatalf("%s lost its %s search attribute: %v", id, name, info.GetSearchAttributes())
		}
	}
}

func TestRunWorkflowAndUI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, Options{DataDir: dir})

	if !strings.HasPrefix(s.FrontendAddress(), "127.0.0.1:") {
		t.Errorf("FrontendAddress = %q", s.FrontendAddress())
	}
	if !strings.HasPrefix(s.UIURL(), "http://127.0.0.1:") {
		t.Errorf("UIURL = %q", s.UIURL())
	}
	if s.Namespace() != "default" {
		t.Errorf("Namespace = %q", s.Namespace())
	}
	if _, err := os.Stat(filepath.Join(dir, dbFileName)); err != nil {
		t.Errorf("database file: %v", err)
	}
	// The journal_mode pragma reached SQLite.
	if _, err := os.Stat(filepath.Join(dir, dbFileName+"-wal")); err != nil {
		t.Errorf("no WAL file: %v", err)
	}

	runGreet(t, s, "greet-1")

	resp, err := http.Get(s.UIURL() + "/")
	if err != nil {
		t.Fatalf("UI: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("UI status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("UI content type %q", ct)
	}
	if !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("UI body is not HTML: %.200s", body)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := http.Get(s.UIURL() + "/healthz"); err == nil {
		t.Errorf("UI still answers after Stop")
	}
}

func TestRestartKeepsWorkflows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const id = "restart-1"

	s1 := start(t, Options{DataDir: dir, UIPort: -1})
	if s1.UIURL() != "" {
		t.Errorf("UIURL with UIPort -1 = %q", s1.UIURL())
	}
	runGreet(t, s1, id)
	if err := s1.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	s2 := start(t, Options{DataDir: dir, UIPort: -1})
	c := dial(t, s2)
	requireCompleted(t, c, id)

	// Visibility (what the UI lists) survived too, and the search attribute
	// is queryable.
	waitCount(t, c, s2.Namespace(), serviceNameAttr+" = '"+serviceName+"' AND "+statusAttr+` = "ready"`, 1)
	if _, err := os.Stat(filepath.Join(dir, visibilityFileName)); err != nil {
		t.Errorf("a new DataDir has no visibility database of its own: %v", err)
	}
	if err := s2.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// In one process the SQLite plugin keeps its connection to the file open
	// across restarts, so only a new process proves the data is on disk.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDescribeInNewProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envDescribeDir+"="+dir, envDescribeID+"="+id)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestDescribeInNewProcess") {
		t.Fatalf("describe in a new process: %v\n%s", err, out)
	}
}

// The visibility database keeps the indexes of what the Web UI and
// svcbridge filter by and drops the 37 of attributes nothing here sets;
// a query on one of those still answers.
func TestVisibilityDropsUnusedIndexes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, Options{DataDir: dir, UIPort: -1})
	runGreet(t, s, "indexes-1")
	c := dial(t, s)
	waitCount(t, c, s.Namespace(), serviceNameAttr+" = '"+serviceName+"' AND ExecutionStatus = 'Completed'", 1)
	waitCount(t, c, s.Namespace(), "HistoryLength > 0 AND TemporalSchedulePaused IS NULL", 1)

	db, err := sql.Open("sqlite", filepath.Join(dir, visibilityFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	indexes := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes[name] = true
	}
	for _, gone := range unusedVisibilityIndexes {
		if indexes[gone] {
			t.Errorf("index %s is still there", gone)
		}
	}
	for _, kept := range []string{"default_idx", "by_workflow_id", "by_workflow_type", "by_status", "by_keyword_01", "by_keyword_10"} {
		if !indexes[kept] {
			t.Errorf("index %s was dropped", kept)
		}
	}
}

// waitCount waits until query counts want workflows. Visibility is
// written asynchronously, hence the wait.
func waitCount(t *testing.T, c client.Client, namespace, query string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		if err != nil {
			t.Fatalf("count %q: %v", query, err)
		}
		if resp.GetCount() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("count %q = %d, want %d", query, resp.GetCount(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDescribeInNewProcess is the child half of TestRestartKeepsWorkflows.
func TestDescribeInNewProcess(t *testing.T) {
	dir, id := os.Getenv(envDescribeDir), os.Getenv(envDescribeID)
	if dir == "" {
		t.Skip("only run as a child of TestRestartKeepsWorkflows")
	}
	s := start(t, Options{DataDir: dir, UIPort: -1})
	requireCompleted(t, dial(t, s), id)
}

func TestInMemory(t *testing.T) {
	t.Parallel()
	s := start(t, Options{UIPort: -1, Namespace: "svcbridge-test"})
	if s.Namespace() != "svcbridge-test" {
		t.Errorf("Namespace = %q", s.Namespace())
	}
	runGreet(t, s, "mem-1")
	requireCompleted(t, dial(t, s), "mem-1")
}

// A taken port is an error from Start, not a crash inside the server.
func TestPortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	for _, o := range []Options{{FrontendPort: port}, {UIPort: port}} {
		s, err := Start(context.Background(), o)
		if err == nil {
			_ = s.Stop()
			t.Errorf("Start(%+v) on a taken port succeeded", o)
			continue
		}
		// The caller names its setting: the error says which port.
		var perr *PortError
		if !errors.As(err, &perr) || perr.Port != port || perr.UI != (o.UIPort == port) || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("Start(%+v) on a taken port: %v, want a PortError of port %d in use", o, err, port)
		}
	}
}
