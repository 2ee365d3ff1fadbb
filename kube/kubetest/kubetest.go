// Package kubetest runs a real kube-apiserver and etcd for tests through
// controller-runtime's envtest: one control plane per test binary, started
// by the first test that needs it; the package's TestMain calls Stop.
// Build the binaries once with scripts/kube-bins.sh; without them the tests
// skip saying so (and fail when CI is set, since CI builds them).
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var env struct {
	once  sync.Once
	env   *envtest.Environment
	cfg   *rest.Config
	cs    kubernetes.Interface
	skip  string // why the tests skip
	err   error  // the control plane did not start
	certs string // the kube-apiserver's certificate directory
}

// AssetsDir is where kube-apiserver and etcd are looked for:
// $KUBEBUILDER_ASSETS, else $SVCBRIDGE_KUBE_BIN, else scripts/kube-bins.sh's
// default ~/.cache/svcbridge/k8s-bin.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	if dir := os.Getenv("SVCBRIDGE_KUBE_BIN"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "svcbridge", "k8s-bin")
}

func start() {
	dir := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, bin)); err != nil || fi.IsDir() {
			env.skip = fmt.Sprintf("no %s in %s: run scripts/kube-bins.sh to build kube-apiserver and etcd (or set KUBEBUILDER_ASSETS)", bin, dir)
			return
		}
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 90 * time.Second, // 2 shared cores under a parallel go test ./...
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	apiserver := e.ControlPlane.GetAPIServer()
	apiserver.Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")
	// A certificate directory of our own survives APIServer.Stop (envtest
	// removes one it made), so StartAPIServer serves the same
	// certificates on the same port and existing clients reconnect.
	certs, err := os.MkdirTemp("", "svcbridge-apiserver-")
	if err != nil {
		env.err = err
		return
	}
	apiserver.CertDir, env.certs = certs, certs
	cfg, err := e.Start()
	if err != nil {
		env.err = fmt.Errorf("start kube-apiserver and etcd from %s: %w", dir, err)
		_ = e.Stop()
		return
	}
	cfg.QPS, cfg.Burst = 1000, 1000 // client-go's default 5 qps makes tests crawl
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		env.err = err
		_ = e.Stop()
		return
	}
	env.env, env.cfg, env.cs = e, cfg, cs
}

func need(t testing.TB) {
	t.Helper()
	env.once.Do(start)
	if env.skip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(env.skip)
		}
		t.Skip(env.skip)
	}
	if env.err != nil {
		t.Fatal(env.err)
	}
}

// Client returns a client of the test control plane, starting it on first
// use.
func Client(t testing.TB) kubernetes.Interface {
	need(t)
	return env.cs
}

// RESTConfig returns the admin config of the test control plane.
func RESTConfig(t testing.TB) *rest.Config {
	need(t)
	return rest.CopyConfig(env.cfg)
}

// Stop stops the control plane if a test started it.
func Stop() {
	if env.env != nil {
		if err := env.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}
	if env.certs != "" {
		os.RemoveAll(env.certs)
	}
}

// StopAPIServer stops the kube-apiserver (etcd keeps running), as an
// outage of the Kubernetes API; StartAPIServer brings the same one back.
func StopAPIServer(t testing.TB) {
	need(t)
	if err := env.env.ControlPlane.GetAPIServer().Stop(); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the
// same address and etcd, and returns once it is healthy.
func StartAPIServer(t testing.TB) {
	need(t)
	if err := env.env.ControlPlane.GetAPIServer().Start(); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
}

// Kubeconfig returns a kubeconfig file's content for the test control
// plane, for code that loads one the usual way.
func Kubeconfig(t testing.TB) []byte {
	need(t)
	return env.env.KubeConfig
}
