package service

import (
	"testing"
	"time"
)

func TestAnsweredRequest(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		svc     Service
		answers bool
	}{
		{"created, not reconciled", Service{ProvisioningStatus: StatusPending, Generation: 1}, true},
		{"updated while ready", Service{ProvisioningStatus: StatusReady, Generation: 3, ObservedGeneration: 2}, true},
		{"reconcile asked of a ready service", Service{ProvisioningStatus: StatusReady, Generation: 2, ObservedGeneration: 2,
			ReconcileRequest: 5, ObservedReconcileRequest: 4}, true},
		{"failed, retried", Service{ProvisioningStatus: StatusFailed, Generation: 2, ObservedGeneration: 2}, true},
		{"ready and settled (agent change, resync, drift)", Service{ProvisioningStatus: StatusReady, Generation: 2,
			ObservedGeneration: 2, ReconcileRequest: 4, ObservedReconcileRequest: 4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.svc.RequestedAt = at
			got, ok := tc.svc.AnsweredRequest()
			if ok != tc.answers {
				t.Fatalf("answers a request: %v, want %v", ok, tc.answers)
			}
			if ok && !got.Equal(at) {
				t.Errorf("requested at %v, want %v", got, at)
			}
			if !ok && !got.IsZero() {
				t.Errorf("no request answered, but a time: %v", got)
			}
		})
	}
}
