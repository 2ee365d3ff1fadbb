package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"svcbridge/reconcile"
	"svcbridge/workflows"
)

// records keeps what a logger wrote: each record's level, message and
// attributes (those of With first).
type records struct {
	mu    sync.Mutex
	lines []line
}

type line struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

type recordHandler struct {
	r     *records
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return recordHandler{h.r, append(h.attrs[:len(h.attrs):len(h.attrs)], a...)}
}
func (h recordHandler) Handle(_ context.Context, rec slog.Record) error {
	l := line{rec.Level, rec.Message, map[string]string{}}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = fmt.Sprint(a.Value.Any()); return true })
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.lines = append(h.r.lines, l)
	return nil
}

// passSteps is a pass over a service that exists (or not), whose steps
// fail as fail says: the errors the SDK would log are reconcile.Run's own.
type passSteps struct {
	plan reconcile.Plan
	fail map[string]error
}

func (p passSteps) Step(string)                             {}
func (p passSteps) Plan(string) (reconcile.Plan, error)     { return p.plan, p.fail["plan"] }
func (p passSteps) ReconcileAgents(string, []string) error  { return p.fail["agents"] }
func (p passSteps) Kube(string) (*string, error)            { return nil, p.fail["kube"] }
func (p passSteps) Finish(reconcile.Finish) (string, error) { return "", p.fail["finish"] }
func (p passSteps) Queue(string, []string) error            { return p.fail["queue"] }

// passError is the error reconcile.Run returns for the pass p.
func passError(t *testing.T, p passSteps) error {
	t.Helper()
	_, err := reconcile.Run(p, "checkout")
	if err == nil {
		t.Fatal("the pass did not fail")
	}
	return err
}

// TestSDKLoggerLevels: the SDK's "Activity error." of a reconcile pass is
// not an ERROR: a failure the pass recorded on the service (and logged at
// WARN then) is a DEBUG line, any other pass failure the one WARN line
// with the service and the reason; every other error stays an ERROR.
func TestSDKLoggerLevels(t *testing.T) {
	ids := workflows.IDs{Prefix: "svcbridge/"}
	down := errors.New("database is down")
	exists := reconcile.Plan{Exists: true, Generation: 1, Sites: []string{"hub"}, HubSite: "hub"}
	invalid := exists
	invalid.Invalid = "Agent fog-a has routerMode none: a TCP bridge service requires a router on the agent"
	fanout := exists
	fanout.FanoutCount = 3

	type want struct {
		level  slog.Level
		msg    string
		reason string // of the WARN line
	}
	for _, tc := range []struct {
		name string
		err  error
		want want
	}{
		{"invalid placement, recorded", passError(t, passSteps{plan: invalid}), want{slog.LevelDebug, sdkActivityError, ""}},
		{"no ingress, recorded", passError(t, passSteps{plan: exists, fail: map[string]error{
			"agents": temporal.NewNonRetryableApplicationError("no ingress yet", reconcile.TypeNoIngress, nil)}}),
			want{slog.LevelDebug, sdkActivityError, ""}},
		{"router write, recorded", passError(t, passSteps{plan: exists, fail: map[string]error{"agents": down}}),
			want{slog.LevelDebug, sdkActivityError, ""}},
		{"router write, recording failed", passError(t, passSteps{plan: exists, fail: map[string]error{"agents": down, "finish": down}}),
			want{slog.LevelWarn, reconcile.LogPassFailed, "write router config: database is down; recording it failed: database is down"}},
		{"plan", passError(t, passSteps{fail: map[string]error{"plan": down}}),
			want{slog.LevelWarn, reconcile.LogPassFailed, "plan: database is down"}},
		{"fan-out", passError(t, passSteps{plan: fanout, fail: map[string]error{"queue": down}}),
			want{slog.LevelWarn, reconcile.LogPassFailed, "queue agents: database is down"}},
		{"not a pass's", temporal.NewApplicationError("boom", "SomethingElse"), want{slog.LevelError, sdkActivityError, ""}},
		{"plain error", down, want{slog.LevelError, sdkActivityError, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r records
			// The SDK hands its logger on through With, and logs the
			// attempt's own keys with the message.
			l := sdklog.With(SDKLogger(slog.New(recordHandler{r: &r}), ids), "Namespace", "default")
			l.Error(sdkActivityError, "WorkflowID", ids.Service("checkout"), "RunID", "r1",
				"ActivityType", reconcile.ActivityReconcileService, "Attempt", 2, sdkErrorKey, tc.err)
			if len(r.lines) != 1 {
				t.Fatalf("%d lines: %+v", len(r.lines), r.lines)
			}
			got := r.lines[0]
			if got.level != tc.want.level || got.msg != tc.want.msg || got.attrs["Namespace"] != "default" {
				t.Fatalf("%v %q %v, want %v %q", got.level, got.msg, got.attrs, tc.want.level, tc.want.msg)
			}
			if got.level != slog.LevelWarn {
				if got.attrs[sdkErrorKey] != tc.err.Error() {
					t.Errorf("the SDK's line lost its error: %v", got.attrs)
				}
				return
			}
			if got.attrs["service"] != "checkout" || got.attrs["reason"] != tc.want.reason || got.attrs["Attempt"] != "2" {
				t.Errorf("WARN line's attributes %v: want service checkout, reason %q, the attempt", got.attrs, tc.want.reason)
			}
			if _, ok := got.attrs[sdkErrorKey]; ok {
				t.Errorf("WARN line repeats the error: %v", got.attrs)
			}
		})
	}

	// Other lines keep their level.
	var r records
	l := SDKLogger(slog.New(recordHandler{r: &r}), ids)
	l.Error("Workflow panic", sdkErrorKey, temporal.NewApplicationError("x", reconcile.TypeInvalidPlacement))
	l.Warn("Failed to poll for task.")
	l.Info("Started Worker")
	if got := levels(&r); !slices.Equal(got, []slog.Level{slog.LevelError, slog.LevelWarn, slog.LevelInfo}) {
		t.Errorf("other lines: %v", got)
	}
}

// TestSDKLoggerWarnsOnce: a service's failure is one WARN line; its
// retries are DEBUG lines, until the reason changes or the service was
// ready in between. Another service's failure is its own.
func TestSDKLoggerWarnsOnce(t *testing.T) {
	var r records
	l := SDKLogger(slog.New(recordHandler{r: &r}), workflows.IDs{Prefix: "svcbridge/"})
	// As activities.FinishService logs, through the activity's logger.
	activity := func() sdklog.Logger { return sdklog.With(l, "ActivityType", reconcile.ActivityFinishService) }
	fail := func(service, reason string) {
		activity().Warn(reconcile.LogPassFailed, "service", service, "generation", 1, "reason", reason)
	}
	fail("checkout", "Agent fog-a has routerMode none")
	fail("checkout", "Agent fog-a has routerMode none") // the retry passes
	fail("checkout", "Agent fog-a has routerMode none")
	fail("vendor", "Agent fog-a has routerMode none")
	fail("checkout", "Agent fog-b has routerMode none") // another reason
	activity().Info(reconcile.LogServiceReady, "service", "checkout", "generation", 2)
	fail("checkout", "Agent fog-b has routerMode none") // failing again
	want := []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelWarn, slog.LevelWarn, slog.LevelInfo, slog.LevelWarn}
	if got := levels(&r); !slices.Equal(got, want) {
		t.Errorf("levels %v, want %v", got, want)
	}
}

func levels(r *records) []slog.Level {
	var out []slog.Level
	for _, l := range r.lines {
		out = append(out, l.level)
	}
	return out
}
