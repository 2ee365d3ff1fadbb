package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"svcbridge/bench"
	"svcbridge/service"
	"svcbridge/worker"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

// The floor's workflows run on a task queue of their own, so that they
// never meet svcbridge's worker in a shared namespace.
const (
	floorTaskQueue = "prodbench-floor"
	floorWorkflow  = "FloorWorkflow"
)

// floorMarks records when each floor workflow's pass ran: its ready (the
// first pass) and its gone (the pass after the delete's signal). The
// workflows run in this process, so the times need no round trip.
type floorMarks struct {
	mu          sync.Mutex
	ready, gone map[string]time.Time
	readyN      chan struct{} // one send per ready
	goneN       chan struct{}
}

func (m *floorMarks) mark(ctx context.Context, created bool) error {
	id, now := activity.GetInfo(ctx).WorkflowExecution.ID, time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	at, n := m.gone, m.goneN
	if created {
		at, n = m.ready, m.readyN
	}
	if _, seen := at[id]; !seen {
		at[id] = now
		n <- struct{}{}
	}
	return nil
}

// floorWorkflowOf is ServiceWorkflow's create and delete with nothing of
// svcbridge's in them: a local activity for the pass, the
// ProvisioningStatus upsert and the current details after it, a wait for
// the reconcile signal, then the delete's pass, its upsert, and the end.
// Without status, the pass leaves ProvisioningStatus as the start set it:
// what a create would cost without its second visibility write.
func floorWorkflowOf(m *floorMarks, status bool) func(workflow.Context) error {
	return func(ctx workflow.Context) error {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second})
		pass := func(created bool, to string) error {
			if err := workflow.ExecuteLocalActivity(lctx, m.mark, created).Get(ctx, nil); err != nil {
				return err
			}
			workflow.SetCurrentDetails(ctx, to)
			if !status {
				return nil
			}
			return workflow.UpsertTypedSearchAttributes(ctx, workflows.StatusKey.ValueSet(to))
		}
		if err := pass(true, service.StatusReady); err != nil {
			return err
		}
		workflow.GetSignalChannel(ctx, workflows.SignalReconcile).Receive(ctx, nil)
		return pass(false, "deleting")
	}
}

// floorResult is the floor's one line: what Temporal alone allows for
// n workflows of a service's shape, started and then signalled to end by
// as many clients as the scale bench posts with.
type floorResult struct {
	N            int     `json:"n"`
	Status       bool    `json:"status_upserts"`
	Clients      int     `json:"clients"`
	FillRate     float64 `json:"fill_rate_per_s"`
	StartRate    float64 `json:"starts_per_s"`
	StartP50     float64 `json:"start_p50_ms"`
	StartP99     float64 `json:"start_p99_ms"`
	ReadyP50     float64 `json:"start_ready_p50_ms"`
	DeleteRate   float64 `json:"delete_rate_per_s"`
	SignalP99    float64 `json:"signal_p99_ms"`
	StartErrors  int     `json:"start_errors"`
	SignalErrors int     `json:"signal_errors"`
	// CPU is this process's (the starts, the worker, the signals).
	CPU float64 `json:"cpu_s"`
}

// floor measures the production topology's ceiling for svcbridge's fill:
// n workflows of a service's shape, without svcbridge (no API, no store),
// on the Temporal server at frontend, with a worker in this process set up
// as svcbridge's (its pollers, its workflow cache) and a separate client
// for the starts, as the api's has no worker, started as the api starts a
// service's (temporalclient's options). It prints one JSON line.
// status says whether the passes upsert ProvisioningStatus, as svcbridge's do.
func floor(frontend, ns string, n, clients int, status bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	opts := client.Options{HostPort: frontend, Namespace: ns, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))}
	wc, err := client.DialContext(ctx, opts)
	if err != nil {
		return err
	}
	defer wc.Close()
	sc, err := client.DialContext(ctx, opts)
	if err != nil {
		return err
	}
	defer sc.Close()

	m := &floorMarks{ready: map[string]time.Time{}, gone: map[string]time.Time{},
		readyN: make(chan struct{}, n), goneN: make(chan struct{}, n)}
	w := sdkworker.New(wc, floorTaskQueue, sdkworker.Options{MaxConcurrentWorkflowTaskPollers: worker.WorkflowTaskPollers})
	w.RegisterWorkflowWithOptions(floorWorkflowOf(m, status), workflow.RegisterOptions{Name: floorWorkflow})
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	starter := temporalclient.Client{Temporal: sc, TaskQueue: floorTaskQueue}
	run := time.Now().Format("150405")
	name := func(i int) string { return fmt.Sprintf("prodbench-floor-%s-%05d", run, i) }
	var r floorResult
	r.N, r.Clients, r.Status = n, clients, status

	var firstErr sync.Once
	started := make([]time.Time, n)
	var starts bench.Latencies
	t0 := time.Now()
	bench.Parallel(ctx, n, clients, func(i int) {
		started[i] = time.Now()
		_, err := sc.ExecuteWorkflow(ctx, starter.ServiceStart(name(i)), floorWorkflow)
		starts.Add(time.Since(started[i]), err)
		logFirst(&firstErr, "start", err)
	})
	r.StartRate = round2(float64(starts.OK()) / time.Since(t0).Seconds())
	r.StartErrors = starts.Errors()
	if err := await(ctx, m.readyN, starts.OK()); err != nil {
		return fmt.Errorf("waiting for the floor's workflows to be ready: %w", err)
	}
	r.FillRate = round2(float64(starts.OK()) / time.Since(t0).Seconds())
	r.StartP50, r.StartP99 = starts.Percentile(0.50), starts.Percentile(0.99)
	var ready bench.Latencies
	m.mu.Lock()
	for i := range n {
		if at, ok := m.ready[starter.Service(name(i))]; ok {
			ready.Add(at.Sub(started[i]), nil)
		}
	}
	m.mu.Unlock()
	r.ReadyP50 = ready.Percentile(0.50)

	var signals bench.Latencies
	t0 = time.Now()
	bench.Parallel(ctx, n, clients, func(i int) {
		s := time.Now()
		err := sc.SignalWorkflow(ctx, starter.Service(name(i)), "", workflows.SignalReconcile, workflows.SignalFromSvcbridge)
		signals.Add(time.Since(s), err)
		logFirst(&firstErr, "signal", err)
	})
	if err := await(ctx, m.goneN, signals.OK()); err != nil {
		return fmt.Errorf("waiting for the floor's workflows to end: %w", err)
	}
	r.DeleteRate = round2(float64(signals.OK()) / time.Since(t0).Seconds())
	r.SignalP99, r.SignalErrors = signals.Percentile(0.99), signals.Errors()
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err == nil {
		r.CPU = round2(time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds())
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// logFirst logs err if it is the run's first.
func logFirst(once *sync.Once, what string, err error) {
	if err != nil {
		once.Do(func() { log.Printf("floor: %s: %v (the first error)", what, err) })
	}
}

// await takes n marks from marks.
func await(ctx context.Context, marks <-chan struct{}, n int) error {
	for range n {
		select {
		case <-marks:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
