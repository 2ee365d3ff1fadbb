// Package routertest runs real skupper routers (skrouterd, built from
// source by ../shared/router/build.sh) for tests.
package routertest

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary finds skrouterd: $SKROUTERD, else where build.sh installs it by
// default (~/.cache/skrouterd/3.5.1). Without one the test skips saying
// how to build it; under CI (which builds it first) it fails.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("SKROUTERD")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache", "skrouterd", "3.5.1", "sbin", "skrouterd")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "no skupper router at " + bin + ": build one with ../shared/router/build.sh (3-5 minutes, cached), or set SKROUTERD"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Router is a running skrouterd.
type Router struct {
	t       testing.TB
	Name    string
	cmd     *exec.Cmd
	log     *lockedBuffer
	done    chan struct{}
	stopped bool
}

// Start runs `skrouterd -c configFile`, behind wrap when given (an `ip netns
// exec NAME` that runs it in a namespace), until the test ends. The router
// reads the file at start only.
func Start(t testing.TB, name, bin, configFile string, wrap ...string) *Router {
	t.Helper()
	args := append(append([]string{}, wrap...), bin, "-c", configFile)
	cmd := exec.Command(args[0], args[1:]...)
	r := &Router{t: t, Name: name, cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start router %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("router %s log (last 40 lines):\n%s", name, r.Tail(40))
		}
	})
	return r
}

// Exited reports whether the router process ended.
func (r *Router) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Stop ends the router with SIGTERM, as its service manager would.
func (r *Router) Stop() { r.signal(syscall.SIGTERM) }

// Kill ends the router with SIGKILL: no clean shutdown.
func (r *Router) Kill() { r.signal(syscall.SIGKILL) }

func (r *Router) signal(sig syscall.Signal) {
	if r.Exited() {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// Tail is the last n lines of the router's log.
func (r *Router) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(r.log.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Dial connects to a TCP address: Loopback here, or from inside a network
// namespace.
type Dial func(ctx context.Context, addr string) (net.Conn, error)

// Loopback dials from the test's own network namespace.
func Loopback(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// WaitPort waits until dial reaches addr (the router's management
// listener), or fails the test after timeout.
func WaitPort(t testing.TB, dial Dial, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := dial(ctx, addr)
		cancel()
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after %s: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Echo serves ln until the test ends, writing back what each connection
// sends, with prefix before it (so a client can tell which backend
// answered).
func Echo(t testing.TB, ln net.Listener, prefix string) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := c.Write([]byte(prefix)); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

// RoundTrip connects with dial to addr, sends payload and reads back what
// an Echo answers: its prefix and the payload.
func RoundTrip(ctx context.Context, dial Dial, addr, payload string) (string, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	if _, err := c.Write([]byte(payload)); err != nil {
		return "", err
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
