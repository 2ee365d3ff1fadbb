package kube

// Integration tests against a real kube-apiserver and etcd (kubetest), a
// fresh namespace per test.

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"svcbridge/kube/kubetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.Stop()
	os.Exit(code)
}

// needKube returns a client of the test control plane, starting it on
// first use; without the binaries it skips the test (fails under CI).
func needKube(t *testing.T) kubernetes.Interface { return kubetest.Client(t) }

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
