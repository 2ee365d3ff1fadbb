// Package meshtest builds a small edge fleet on one machine for tests and
// benchmarks: each host is its own network namespace (ip netns) with its own
// /etc/hosts, joined to the others by a veth link to a bridge in a
// namespace of its own; the test's own namespace (where svcbridge runs)
// joins the same bridge. Real skupper routers and svcbridge router-syncs
// run in the hosts. Traffic goes only between the namespaces a mesh made,
// on the addresses it gave its own links, and everything is removed when
// the test ends, on failure too.
package meshtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// prefix starts the names of every namespace and link a mesh makes, then
// the creating process's pid: a crashed run's leftovers are known by it.
const prefix = "sbm"

// Mesh is one fleet of hosts on a bridge.
type Mesh struct {
	t      testing.TB
	id     string // prefix + pid, base 36
	subnet string // "10.a.b."
	lan    string // the bridge's namespace
	// Control is the test's own address on the bridge, where svcbridge
	// listens for the router-syncs.
	Control string
	hosts   []*Host
	links   int
}

// Host is one host of a mesh: its namespace and address.
type Host struct {
	m    *Mesh
	Name string
	NS   string
	IP   string
	fd   *os.File // the namespace, for setns
}

// Available skips the test unless this machine can build a mesh: root and
// iproute2. Under CI (which runs as root) it fails instead.
func Available(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "network namespaces need root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "no ip command: install iproute2"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// New makes an empty mesh: the bridge and the test's link to it.
func New(t testing.TB) *Mesh {
	t.Helper()
	Available(t)
	removeStale()
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	m := &Mesh{t: t, id: prefix + strconv.FormatInt(int64(os.Getpid()), 36) + string(digits[rand.IntN(36)]) + string(digits[rand.IntN(36)])}
	m.subnet = freeSubnet(t)
	m.lan = m.id + "-lan"
	t.Cleanup(m.remove)
	m.ip("netns", "add", m.lan)
	m.ip("-n", m.lan, "link", "add", "br0", "type", "bridge")
	m.ip("-n", m.lan, "link", "set", "br0", "up")
	m.Control = m.subnet + "1"
	m.link("", m.Control)
	return m
}

// link joins namespace ns ("": the test's own) to the bridge with a veth
// pair, giving its end address ip.
func (m *Mesh) link(ns, ip string) {
	n := strconv.Itoa(m.links)
	m.links++
	end, peer := m.id+"h"+n, m.id+"p"+n
	m.ip("link", "add", end, "type", "veth", "peer", "name", peer)
	m.ip("link", "set", peer, "netns", m.lan)
	m.ip("-n", m.lan, "link", "set", peer, "master", "br0", "up")
	in := []string{}
	if ns != "" {
		m.ip("link", "set", end, "netns", ns)
		in = []string{"-n", ns}
		m.ip(append(in, "link", "set", "lo", "up")...)
	}
	m.ip(append(in, "addr", "add", ip+"/24", "dev", end)...)
	m.ip(append(in, "link", "set", end, "up")...)
}

// Host adds a host named name; hosts are the names its /etc/hosts
// resolves besides localhost (name to address).
func (m *Mesh) Host(name string, hosts map[string]string) *Host {
	m.t.Helper()
	h := &Host{m: m, Name: name, NS: m.id + "-" + name, IP: m.subnet + strconv.Itoa(len(m.hosts)+2)}
	m.ip("netns", "add", h.NS)
	m.link(h.NS, h.IP)
	m.hosts = append(m.hosts, h)
	fd, err := os.Open(filepath.Join("/run/netns", h.NS))
	if err != nil {
		m.t.Fatal(err)
	}
	h.fd = fd
	h.SetHosts(hosts)
	return h
}

// SetHosts rewrites the host's /etc/hosts (`ip netns exec` shows
// /etc/netns/NS/hosts to its processes as /etc/hosts).
func (h *Host) SetHosts(hosts map[string]string) {
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n" + h.IP + " " + h.Name + "\n")
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		fmt.Fprintf(&b, "%s %s\n", hosts[name], name)
	}
	dir := filepath.Join("/etc/netns", h.NS)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.m.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
		h.m.t.Fatal(err)
	}
}

// Wrap is the command prefix that runs a command on the host.
func (h *Host) Wrap() []string { return []string{"ip", "netns", "exec", h.NS} }

// in runs f on a thread in the host's namespace: sockets it makes belong
// to the host. The thread is never handed back to Go's scheduler (it is
// dropped when f's goroutine ends), so nothing else runs in the namespace.
func (h *Host) in(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Setns(int(h.fd.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(fmt.Sprintf("setns %s: %v", h.NS, err))
		}
		f()
	}()
	<-done
}

// Dial connects from the host to addr.
func (h *Host) Dial(ctx context.Context, addr string) (conn net.Conn, err error) {
	h.in(func() {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	})
	return conn, err
}

// Listen listens on the host at addr.
func (h *Host) Listen(addr string) (ln net.Listener, err error) {
	h.in(func() { ln, err = net.Listen("tcp", addr) })
	return ln, err
}

// Refused reports whether err is a connection refused: nothing listens.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func (m *Mesh) ip(args ...string) {
	m.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		m.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the mesh's namespaces, which takes their links with them.
func (m *Mesh) remove() {
	for _, h := range m.hosts {
		h.fd.Close()
		_ = exec.Command("ip", "netns", "del", h.NS).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", h.NS))
	}
	_ = exec.Command("ip", "netns", "del", m.lan).Run()
	// The test's end of its link goes with its peer in the bridge's
	// namespace; a failed setup may leave it alone.
	_ = exec.Command("ip", "link", "del", m.id+"h0").Run()
}

// removeStale deletes what meshes of processes that no longer run left
// behind (a run killed before its clean-up).
func removeStale() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		ns, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		id, _, ok := strings.Cut(ns, "-")
		if !ok || !strings.HasPrefix(id, prefix) || len(id) < len(prefix)+3 {
			continue
		}
		pid, err := strconv.ParseInt(id[len(prefix):len(id)-2], 36, 64)
		if err != nil || processAlive(int(pid)) {
			continue
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", ns))
	}
}

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// freeSubnet picks a 10.a.b.0/24 no address or route of this machine is in.
func freeSubnet(t testing.TB) string {
	addrs, _ := exec.Command("ip", "-4", "-o", "addr").Output()
	routes, _ := exec.Command("ip", "-4", "route").Output()
	taken := string(addrs) + string(routes)
	for range 100 {
		s := fmt.Sprintf("10.%d.%d.", 100+rand.IntN(150), rand.IntN(250))
		if !strings.Contains(taken, s) && !strings.Contains(taken, strings.TrimSuffix(s, ".")+".0/") {
			return s
		}
	}
	t.Fatal("no free 10.x.y.0/24 for a mesh")
	return ""
}
