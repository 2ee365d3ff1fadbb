package systemtest

import (
	"net/http"
	"testing"
	"time"

	"svcbridge/metrics"
)

// readyLatency reads svcbridge_service_ready_seconds' count and sum as
// /metrics serves them.
func readyLatency(t *testing.T) (uint64, float64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == metrics.Namespace+"_service_ready_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("svcbridge_service_ready_seconds is not registered")
	return 0, 0
}

// The time to ready counts from the request a pass answers: a reconcile of
// a service that has been ready for a while is observed as the reconcile's
// own time, not as the service's age.
func TestReadyLatencyCountsFromTheRequest(t *testing.T) {
	forDialects(t, func(t *testing.T, dialect string) {
		s := newSystem(t, dialect, 1)
		s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		count0, _ := readyLatency(t)
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
			"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}, nil)
		s.waitStatus("vendor", "ready")
		count1, sum1 := readyLatency(t)
		if count1 != count0+1 {
			t.Fatalf("the create's pass was observed %d times, want once", count1-count0)
		}

		// Ready for a while, then reconciled on request.
		const ready = 4 * time.Second
		time.Sleep(ready)
		s.must(http.StatusAccepted, "POST", "/api/v3/services/vendor/reconcile", nil, nil)
		s.waitFor("the reconcile's pass to be observed", 30*time.Second, func() (bool, string) {
			n, _ := readyLatency(t)
			return n == count1+1, ""
		})
		if _, sum2 := readyLatency(t); sum2-sum1 >= ready.Seconds()/2 {
			t.Errorf("a reconcile of a service ready for %s was observed as %.1fs to ready", ready, sum2-sum1)
		}
	})
}
