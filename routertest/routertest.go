// Package routertest runs real skupper routers (skrouterd, built from
// source by ../shared/router/build.sh) for tests.
package routertest

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"svcbridge/proctest"
)

// Path is where skrouterd is looked for: $SKROUTERD, else where build.sh
// installs it by default (~/.cache/skrouterd/3.5.1); ok when it is there.
func Path() (bin string, ok bool) {
	bin = os.Getenv("SKROUTERD")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache", "skrouterd", "3.5.1", "sbin", "skrouterd")
	}
	_, err := os.Stat(bin)
	return bin, err == nil
}

// Binary finds skrouterd (Path). Without one the test skips saying how to
// build it; under CI (which builds it first) it fails.
func Binary(t testing.TB) string {
	t.Helper()
	bin, ok := Path()
	if !ok {
		msg := "no skupper router at " + bin + ": build one with ../shared/router/build.sh (3-5 minutes, cached), or set SKROUTERD"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Start runs `skrouterd -c configFile`, behind wrap when given (an `ip
// netns exec NAME` that runs it in a namespace), until the test ends. The
// router reads the file at start only.
func Start(t testing.TB, name, bin, configFile string, wrap ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, "router "+name, nil, append(append([]string{}, wrap...), bin, "-c", configFile)...)
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
