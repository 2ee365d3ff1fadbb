package systemtest

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/grpc"

	"svcbridge/service"
	"svcbridge/store"
)

// startCalls records the Temporal calls that start or signal vendor's
// workflow, and whether each start's answer carried its first task.
type startCalls struct {
	mu    sync.Mutex
	calls []string
}

func (r *startCalls) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	call := ""
	switch reply := reply.(type) {
	case *workflowservice.StartWorkflowExecutionResponse:
		switch {
		case err != nil:
			call = "start refused"
		case reply.GetEagerWorkflowTask() != nil:
			call = "start with its first task"
		default:
			call = "start"
		}
	case *workflowservice.SignalWithStartWorkflowExecutionResponse:
		call = "signal"
	}
	if call != "" && req.(interface{ GetWorkflowId() string }).GetWorkflowId() == processIDs.Service("vendor") {
		r.mu.Lock()
		r.calls = append(r.calls, call)
		r.mu.Unlock()
	}
	return err
}

func (r *startCalls) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// TestCreateStartsItsWorkflowEagerly: where a worker shares the API's
// Temporal client, as in dev, a create's start answer carries the new
// workflow's first task, so it skips the server's matching (a fill's
// bottleneck on the embedded server). A create whose name's workflow still
// runs (the deleted service's, removing its objects) signals that one.
func TestCreateStartsItsWorkflowEagerly(t *testing.T) {
	var rec startCalls
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(rec.intercept)}},
	}))
	s := newSystem(t, store.SQLite, 0, sharing(ts, processIDs.Prefix, taskQueue))
	w := s.startWorker()
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	rec.take()
	vendor := map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443}
	s.must(http.StatusCreated, "POST", "/api/v3/services", vendor, nil)
	s.waitStatus("vendor", service.StatusReady)
	if got := rec.take(); !slices.Equal(got, []string{"start with its first task"}) {
		t.Fatalf("a create called Temporal with %q, want one start answered with its first task", got)
	}

	// Without a worker the deleted service's workflow keeps running.
	w.Stop()
	s.must(http.StatusNoContent, "DELETE", "/api/v3/services/vendor", nil, nil)
	rec.take()
	s.must(http.StatusCreated, "POST", "/api/v3/services", vendor, nil)
	if got := rec.take(); !slices.Equal(got, []string{"start refused", "signal"}) {
		t.Fatalf("a create of a name whose workflow runs called Temporal with %q, want a refused start, then a signal", got)
	}
	s.startWorker()
	s.waitStatus("vendor", service.StatusReady)
	if listeners, _ := s.bridges("hub"); listeners["vendor-listener"] == nil {
		t.Error("the re-created service has no hub listener")
	}
}
