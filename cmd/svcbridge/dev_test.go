package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBusyPortNamesItsFlag: a --temporal-port or --ui-port something
// listens on fails the start with the flag and the port, and the failed
// start removes the data directory it made (and the parent it made with
// it); one that existed is left with what it held. (A busy --listen is
// found once Temporal and the store run: metrics.Temporal registers its
// collectors once a process, which TestMetricsFromTheStart does.)
func TestBusyPortNamesItsFlag(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	for _, flag := range []string{"--temporal-port", "--ui-port"} {
		t.Run(flag, func(t *testing.T) {
			made := filepath.Join(t.TempDir(), "new")
			existing := t.TempDir()
			if err := os.WriteFile(filepath.Join(existing, "keep"), []byte("mine\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{filepath.Join(made, "data"), existing} {
				cfg := devConfig(t, "--data-dir", dir, "--temporal-port", "0", "--ui-port", "0", "--database-url", "",
					"--log-level", "error", flag, port)
				d, err := startDev(context.Background(), cfg, "127.0.0.1:0", cfg.UIPort)
				if err == nil {
					d.close()
					t.Fatalf("%s %s: dev started beside the listener", flag, port)
				}
				if want := flag + " " + port + " is in use: "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "address already in use") {
					t.Errorf("%s %s: %v, want %q and why", flag, port, err, want)
				}
			}
			if _, err := os.Lstat(made); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the failed start left the data directory it made: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(existing, "keep")); err != nil || string(b) != "mine\n" {
				t.Errorf("the failed start changed what the existing data directory held: %q %v", b, err)
			}
			// And it let the directory go.
			unlock, err := lockDataDir(existing)
			if err != nil {
				t.Fatalf("the failed start kept the data directory locked: %v", err)
			}
			unlock()
		})
	}
}
