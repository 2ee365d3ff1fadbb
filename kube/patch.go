package kube

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// servicePatch is the JSON patch that brings live to desired: a test of
// live's resourceVersion (so a concurrent change fails the patch instead of
// being overwritten), then /spec/type, /spec/selector, /spec/ports,
// /metadata/annotations, /metadata/labels and each option field. A write
// is an "add", which RFC 6902 defines to replace a member that exists and
// create one that does not: a Service created without tags has no
// /metadata/annotations, and "replace" of a missing member is an error by
// the RFC. An option desired no longer has is a "remove", only when live
// has it ("remove" of a missing member fails on kube-apiserver). The
// annotation and label maps are replaced whole, as seed 000 says:
// annotations svcbridge did not generate are removed.
func servicePatch(live, desired *corev1.Service) ([]byte, error) {
	d := withServerDefaults(desired)
	annotations := d.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	selector := d.Spec.Selector
	if selector == nil {
		selector = map[string]string{}
	}
	ops := []patchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: live.ResourceVersion},
		{Op: "add", Path: "/spec/type", Value: d.Spec.Type},
		{Op: "add", Path: "/spec/selector", Value: selector},
		{Op: "add", Path: "/spec/ports", Value: d.Spec.Ports},
		{Op: "add", Path: "/metadata/annotations", Value: annotations},
		{Op: "add", Path: "/metadata/labels", Value: d.Labels},
	}
	for _, f := range optionFields(live, d) {
		switch {
		case f.wantSet:
			ops = append(ops, patchOp{Op: "add", Path: f.path, Value: f.want})
		case f.haveSet:
			ops = append(ops, patchOp{Op: "remove", Path: f.path})
		}
	}
	return json.Marshal(ops)
}

// UpToDate reports whether live already has what a patch (servicePatch) would write.
// Fields the server fills in (nodePort, clusterIP, …) are not compared;
// the options are compared with Kubernetes' defaults filled in.
func UpToDate(live, desired *corev1.Service) bool {
	d := withServerDefaults(desired)
	if live.Spec.Type != d.Spec.Type || !maps.Equal(live.Spec.Selector, d.Spec.Selector) ||
		!maps.Equal(live.Annotations, d.Annotations) || !maps.Equal(live.Labels, d.Labels) ||
		len(live.Spec.Ports) != len(d.Spec.Ports) {
		return false
	}
	for _, f := range optionFields(live, d) {
		if !f.upToDate() {
			return false
		}
	}
	for i, want := range d.Spec.Ports {
		l := live.Spec.Ports[i]
		if l.Name != want.Name || l.Port != want.Port || l.TargetPort != want.TargetPort || l.Protocol != want.Protocol ||
			!equalPtr(l.AppProtocol, want.AppProtocol) || (want.NodePort != 0 && l.NodePort != want.NodePort) {
			return false
		}
	}
	return true
}

func equalPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// failedTest reports whether a PATCH failed because a JSON patch operation
// did not apply. The API server answers that with a bare 422 (reason
// Invalid, the generic message "the server rejected our request due to an
// error in our request", no causes), unlike a validation error, which
// lists its field causes. In servicePatch only the resourceVersion "test"
// can fail that way: every other operation is an "add" under /spec or
// /metadata, which always exist, or a "remove" of a member live had, which
// the passing test guarantees is still there.
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusUnprocessableEntity && (s.Details == nil || len(s.Details.Causes) == 0)
}
