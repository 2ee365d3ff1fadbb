package systemtest

import (
	"os"
	"testing"

	"svcbridge/kube/kubetest"
)

// TestMain stops the kube-apiserver and etcd a Kubernetes test started,
// which would otherwise outlive the test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.Stop()
	os.Exit(code)
}
