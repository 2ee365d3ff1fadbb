package systemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"svcbridge/proctest"
	"svcbridge/service"
)

// TestNoWorkerSaysSo: with the API up and no worker polling the task
// queue, /readyz, a pending service (GET, describe) and `svcbridge status`
// say so; once a worker polls, the service gets ready and they stop.
func TestNoWorkerSaysSo(t *testing.T) {
	proctest.Svcbridge(t) // built before the system starts, so no worker polls while it builds
	s := newSystem(t, "sqlite", 0)
	newFleet(s)
	want := "no worker is polling task queue " + taskQueue
	type withMessage struct {
		ProvisioningStatus  string `json:"provisioningStatus"`
		ProvisioningMessage string `json:"provisioningMessage"`
	}
	var created withMessage
	s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{
		"name": "checkout", "type": "microservice", "resource": "orders/checkout", "targetPort": 8080}, &created)
	if created.ProvisioningStatus != service.StatusPending || created.ProvisioningMessage != want {
		t.Errorf("create answered %+v, want pending saying %q", created, want)
	}
	var got withMessage
	s.must(http.StatusOK, "GET", "/api/v3/services/checkout", nil, &got)
	if got.ProvisioningMessage != want {
		t.Errorf("GET: provisioningMessage %q, want %q", got.ProvisioningMessage, want)
	}
	if r := s.readyz(); r["status"] != "ready" || r["worker"] != want || r["pollers"] != 0.0 {
		t.Errorf("/readyz %v, want ready with worker %q", r, want)
	}
	if out := cliMust(t, s.url, 6, "status").stdout; !strings.Contains(out, "workers: "+want) {
		t.Errorf("svcbridge status does not say %q:\n%s", want, out)
	}
	if out := cliMust(t, s.url, 0, "describe", "service", "checkout").stdout; !cliHasLine(out, "Note:", want) {
		t.Errorf("svcbridge describe does not say %q:\n%s", want, out)
	}

	s.startWorker()
	s.waitStatus("checkout", service.StatusReady)
	s.waitFor("/readyz to see the worker", 30*time.Second, func() (bool, string) {
		r := s.readyz()
		return r["worker"] == "ok", fmt.Sprint(r["worker"])
	})
	var ready withMessage
	s.must(http.StatusOK, "GET", "/api/v3/services/checkout", nil, &ready)
	if ready.ProvisioningMessage != "" {
		t.Errorf("a ready service says %q", ready.ProvisioningMessage)
	}
	if out := cliMust(t, s.url, 0, "status").stdout; strings.Contains(out, "workers:") {
		t.Errorf("svcbridge status still speaks of workers:\n%s", out)
	}
}

// readyz reads /readyz's checks.
func (s *system) readyz() map[string]any {
	s.t.Helper()
	code, body := s.do("GET", "/readyz", nil)
	out := map[string]any{}
	if err := json.Unmarshal(body, &out); err != nil {
		s.t.Fatalf("/readyz: %d %s", code, body)
	}
	return out
}
