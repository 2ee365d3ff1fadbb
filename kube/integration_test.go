package kube

// Integration tests against a real kube-apiserver and etcd, run by
// controller-runtime's envtest: one control plane per test binary (started
// by the first test that needs it, stopped by TestMain), a fresh namespace
// per test. Build the binaries once with scripts/kube-bins.sh; without them
// these tests skip (and fail when CI is set).

import (
	"context"
	"errors"
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

var kubeEnv struct {
	once    sync.Once
	env     *envtest.Environment
	cfg     *rest.Config
	cs      kubernetes.Interface
	skip    string // why the integration tests skip
	err     error  // the control plane did not start
	started time.Duration
}

// kubeAssetsDir is where kube-apiserver and etcd are looked for:
// $KUBEBUILDER_ASSETS, else $SVCBRIDGE_KUBE_BIN, else scripts/kube-bins.sh's
// default ~/.cache/svcbridge/k8s-bin.
func kubeAssetsDir() string {
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

func startKube() {
	dir := kubeAssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, bin)); err != nil || fi.IsDir() {
			kubeEnv.skip = fmt.Sprintf("no %s in %s: run scripts/kube-bins.sh to build kube-apiserver and etcd (or set KUBEBUILDER_ASSETS)", bin, dir)
			return
		}
	}
	start := time.Now()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 90 * time.Second, // 2 shared cores under a parallel go test ./...
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")
	cfg, err := env.Start()
	if err != nil {
		kubeEnv.err = fmt.Errorf("start kube-apiserver and etcd from %s: %w", dir, err)
		_ = env.Stop()
		return
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		kubeEnv.err = err
		_ = env.Stop()
		return
	}
	kubeEnv.env, kubeEnv.cfg, kubeEnv.cs, kubeEnv.started = env, cfg, cs, time.Since(start)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kubeEnv.env != nil {
		if err := kubeEnv.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}
	os.Exit(code)
}

// needKube returns a client of the test control plane, starting it on
// first use; without the binaries it skips the test (fails under CI).
func needKube(t *testing.T) kubernetes.Interface {
	t.Helper()
	kubeEnv.once.Do(startKube)
	if kubeEnv.skip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(kubeEnv.skip)
		}
		t.Skip(kubeEnv.skip)
	}
	if kubeEnv.err != nil {
		t.Fatal(kubeEnv.err)
	}
	return kubeEnv.cs
}

// testCtx is a context that ends with the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func isErr[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
