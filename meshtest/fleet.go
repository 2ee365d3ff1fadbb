package meshtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"svcbridge/porttest"
	"svcbridge/proctest"
	"svcbridge/routerconfig"
	"svcbridge/routermgmt"
	"svcbridge/routertest"
)

// Plane is svcbridge (dev: API, worker, Temporal, store) serving a mesh
// from the test's namespace, on the mesh's Control address.
type Plane struct {
	t     testing.TB
	URL   string
	Token string
	args  []string
	env   []string
	proc  *proctest.Proc
}

// StartPlane starts svcbridge dev for the mesh; env adds settings
// (CONTROL_PLANE=kubernetes, ...).
func StartPlane(t testing.TB, m *Mesh, env ...string) *Plane {
	t.Helper()
	dir := t.TempDir()
	listen := fmt.Sprintf("%s:%d", m.Control, porttest.Free(t))
	p := &Plane{t: t, URL: "http://" + listen,
		args: []string{proctest.Svcbridge(t), "dev", "--data-dir", filepath.Join(dir, "data"), "--listen", listen,
			"--temporal-port", fmt.Sprint(porttest.Free(t)), "--ui-port", fmt.Sprint(porttest.Free(t)), "--log-level", "warn"},
		env: append([]string{"DATABASE_URL=", "XDG_CONFIG_HOME=" + dir}, env...)}
	p.Start()
	token, err := os.ReadFile(filepath.Join(dir, "data", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	p.Token = strings.TrimSpace(string(token))
	return p
}

// Start starts svcbridge (again, on the same data) and waits until it
// answers.
func (p *Plane) Start() {
	p.t.Helper()
	p.proc = proctest.Start(p.t, "svcbridge dev", p.env, p.args...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(p.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if p.proc.Exited() || time.Now().After(deadline) {
			p.t.Fatalf("svcbridge did not come up at %s:\n%s", p.URL, p.proc.Tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops svcbridge: its API, worker and Temporal.
func (p *Plane) Stop() { p.proc.Stop() }

// Call sends a JSON request as the admin and decodes the answer into into
// (when not nil); the status must be want.
func (p *Plane) Call(method, path string, body any, want int, into any) {
	p.t.Helper()
	if status := p.send(method, path, body, into); status != want {
		p.t.Fatalf("%s %s: %d, want %d", method, path, status, want)
	}
}

// Get reads path as the admin into into, returning the status (into is
// filled on a 2xx only).
func (p *Plane) Get(path string, into any) int {
	p.t.Helper()
	return p.send(http.MethodGet, path, nil, into)
}

// send sends a JSON request as the admin, decodes a 2xx answer into into
// (when not nil) and returns the status; another answer is logged.
func (p *Plane) send(method, path string, body any, into any) int {
	p.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.URL+"/api/v3"+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode >= 300:
		p.t.Logf("%s %s: %d: %s", method, path, resp.StatusCode, out)
	case into != nil:
		if err := json.Unmarshal(out, into); err != nil {
			p.t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
	return resp.StatusCode
}

// CLIResult is what a run of the svcbridge CLI printed, and its exit code.
type CLIResult struct {
	Code           int
	Stdout, Stderr string
}

// CLI runs the svcbridge binary's client verbs against the plane, as the
// admin, as a person would.
func (p *Plane) CLI(args ...string) CLIResult {
	p.t.Helper()
	cmd := exec.Command(proctest.Svcbridge(p.t), args...)
	cmd.Env = append(os.Environ(), "SVCBRIDGE_SERVER="+p.URL, "SVCBRIDGE_TOKEN="+p.Token, "XDG_CONFIG_HOME="+p.t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := CLIResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		p.t.Fatal(err)
	}
	return r
}

// File writes content to a file of the test's and returns its path.
func (p *Plane) File(name, content string) string {
	path := filepath.Join(p.t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// Agent creates an agent and returns its token.
func (p *Plane) Agent(body map[string]any) string {
	p.t.Helper()
	var a struct {
		Token string `json:"token"`
	}
	p.Call(http.MethodPost, "/agents", body, http.StatusCreated, &a)
	return a.Token
}

// Node is an agent's host running its router and router-sync.
type Node struct {
	*Host
	plane      *Plane
	tokenFile  string
	ConfigFile string
	Router     *proctest.Proc
	Sync       *proctest.Proc
}

// ManagementPort is where an agent's router takes management (the site
// svcbridge writes: 127.0.0.1 on the host).
var ManagementPort = routerconfig.AMQPPort

// StartNode runs the agent's router-sync on h with its token, waits for the
// router's start-up file it writes, and starts the router from it.
func StartNode(t testing.TB, h *Host, p *Plane, token string) *Node {
	t.Helper()
	dir := t.TempDir()
	n := &Node{Host: h, plane: p, tokenFile: filepath.Join(dir, "token"), ConfigFile: filepath.Join(dir, "skrouterd.json")}
	n.SetToken(token)
	n.StartSync()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(n.ConfigFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the router-sync wrote no start-up file:\n%s", h.Name, n.Sync.Tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.StartRouter()
	return n
}

// SetToken gives the node's router-sync another token, from its next
// start.
func (n *Node) SetToken(token string) {
	if err := os.WriteFile(n.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		n.m.t.Fatal(err)
	}
}

// StartSync starts the agent's router-sync.
func (n *Node) StartSync() {
	t := n.m.t
	args := append(n.Wrap(), proctest.Svcbridge(t), "router-sync", "--server", n.plane.URL, "--token-file", n.tokenFile,
		"--config-file", n.ConfigFile, "--router", fmt.Sprintf("127.0.0.1:%d", ManagementPort), "--long-poll", "20s")
	n.Sync = proctest.Start(t, n.Name+" router-sync", nil, args...)
}

// StartRouter starts the agent's router from its start-up file and waits
// for its management listener.
func (n *Node) StartRouter() {
	t := n.m.t
	n.Router = routertest.Start(t, n.Name, routertest.Binary(t), n.ConfigFile, n.Wrap()...)
	routertest.WaitPort(t, n.Dial, fmt.Sprintf("127.0.0.1:%d", ManagementPort), 15*time.Second)
}

// RoundTrip sends payload from the host to its own port and returns what
// came back.
func (h *Host) RoundTrip(port int, payload string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return routertest.RoundTrip(ctx, h.Dial, fmt.Sprintf("127.0.0.1:%d", port), payload)
}

// Echo serves an echo on the host at addr, answering prefix first.
func (h *Host) Echo(addr, prefix string) {
	h.m.t.Helper()
	ln, err := h.Listen(addr)
	if err != nil {
		h.m.t.Fatalf("%s: listen %s: %v", h.Name, addr, err)
	}
	routertest.Echo(h.m.t, ln, prefix)
}

// Held lists the bridges the node's router holds, as its management says:
// "tcpListener/NAME" and "tcpConnector/NAME", sorted.
func (n *Node) Held() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := n.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", ManagementPort))
	if err != nil {
		return nil, err
	}
	c, err := routermgmt.Over(ctx, nc)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []string
	for _, typ := range []string{routerconfig.EntityTCPListener, routerconfig.EntityTCPConnector} {
		es, err := c.Query(ctx, typ)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, e.Key())
		}
	}
	slices.Sort(out)
	return out, nil
}
