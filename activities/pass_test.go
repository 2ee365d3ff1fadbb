package activities

import (
	"testing"

	"svcbridge/workflows/pass"
)

// ReconcileKubeService fails with TypeNoIngress, which the pass keeps as the
// pass's type: both must name it alike.
func TestNoIngressIsThePassType(t *testing.T) {
	if TypeNoIngress != pass.TypeNoIngress {
		t.Errorf("TypeNoIngress %q, the pass's %q", TypeNoIngress, pass.TypeNoIngress)
	}
}
