package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"svcbridge/reconcile"
	"svcbridge/workflows"
)

// SDKLogger is the Temporal SDK's logger (client.Options.Logger) on l, which
// makes a failed reconcile pass, an expected failure, one WARN line with
// the service and the reason ("service reconcile failed"), never the
// SDK's ERROR "Activity error.":
//
//   - a failure the pass recorded on the service (see recordedTypes) was
//     logged so when it was recorded; the SDK's line goes to DEBUG;
//   - any other failure of a pass (its type one of package reconcile's)
//     becomes that WARN line itself;
//   - the retries of a failure log it again at DEBUG: a service's failure
//     is one WARN until its reason changes or the service is ready.
//
// Every other error stays an ERROR. ids finds the service in a workflow ID.
func SDKLogger(l *slog.Logger, ids workflows.IDs) sdklog.Logger {
	return sdkLogger{sdklog.NewStructuredLogger(l), ids, &failing{reasons: map[string]string{}}}
}

type sdkLogger struct {
	sdklog.Logger
	ids     workflows.IDs
	failing *failing // shared by every logger With makes
}

var _ sdklog.WithLogger = sdkLogger{}

// The SDK's message and keys of a failed activity attempt
// (go.temporal.io/sdk/internal, activityTaskHandlerImpl.Execute).
const (
	sdkActivityError = "Activity error."
	sdkErrorKey      = "Error"
	sdkWorkflowIDKey = "WorkflowID"
)

func (s sdkLogger) With(keyvals ...any) sdklog.Logger {
	return sdkLogger{sdklog.With(s.Logger, keyvals...), s.ids, s.failing}
}

func (s sdkLogger) Warn(msg string, keyvals ...any) {
	if msg == reconcile.LogPassFailed {
		s.logPassFailure(keyvals)
		return
	}
	s.Logger.Warn(msg, keyvals...)
}

func (s sdkLogger) Info(msg string, keyvals ...any) {
	if service, ok := value(keyvals, "service").(string); msg == reconcile.LogServiceReady && ok {
		s.failing.ready(service)
	}
	s.Logger.Info(msg, keyvals...)
}

func (s sdkLogger) Error(msg string, keyvals ...any) {
	if msg != sdkActivityError {
		s.Logger.Error(msg, keyvals...)
		return
	}
	var app *temporal.ApplicationError
	err, _ := value(keyvals, sdkErrorKey).(error)
	switch {
	case !errors.As(err, &app) || !passTypes[app.Type()]:
		s.Logger.Error(msg, keyvals...)
	case recorded(app):
		s.Logger.Debug(msg, keyvals...)
	default:
		s.logPassFailure(s.passFailureAttrs(app, keyvals))
	}
}

// logPassFailure logs a failed pass at WARN, or at DEBUG when it is a
// retry of the service's failure logged last.
func (s sdkLogger) logPassFailure(keyvals []any) {
	service, ok := value(keyvals, "service").(string)
	if !ok || s.failing.first(service, fmt.Sprint(value(keyvals, "reason"))) {
		s.Logger.Warn(reconcile.LogPassFailed, keyvals...)
	} else {
		s.Logger.Debug(reconcile.LogPassFailed, keyvals...)
	}
}

// maxFailing bounds failing's memory: past it, it starts over (a deleted
// service's failure is never followed by its ready).
const maxFailing = 10000

// failing is the reason each failing service's failure was logged with.
type failing struct {
	mu      sync.Mutex
	reasons map[string]string
}

// first reports whether service fails for another reason than the one
// logged last, and remembers reason.
func (f *failing) first(service, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.reasons[service]; ok && last == reason {
		return false
	}
	if len(f.reasons) >= maxFailing {
		clear(f.reasons)
	}
	f.reasons[service] = reason
	return true
}

// ready forgets service's failure.
func (f *failing) ready(service string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.reasons, service)
}

// passTypes are the types of a failed reconcile pass (reconcile.Run).
var passTypes = map[string]bool{
	reconcile.TypePlanFailed: true, reconcile.TypeRouterWriteFailed: true, reconcile.TypeKubernetesFailed: true,
	reconcile.TypeObjectsNotInPlace: true, reconcile.TypeStatusWriteFailed: true, reconcile.TypeFanoutFailed: true,
	reconcile.TypeInvalidPlacement: true, reconcile.TypeNoIngress: true,
}

// recordedTypes are the types of a failure reconcile.Run records on the
// service it exists, whose recording (activities.FinishService) logs it
// at WARN with the service and the reason. A plan, status or fan-out
// failure is not recorded. (A deleted service's pass has nothing to
// record a router write on: its failure is a DEBUG line, and the Web UI's.)
var recordedTypes = map[string]bool{
	reconcile.TypeInvalidPlacement: true, reconcile.TypeNoIngress: true, reconcile.TypeRouterWriteFailed: true,
	reconcile.TypeKubernetesFailed: true, reconcile.TypeObjectsNotInPlace: true,
}

func recorded(app *temporal.ApplicationError) bool {
	return recordedTypes[app.Type()] && !strings.Contains(app.Message(), reconcile.RecordingFailed)
}

// passFailureAttrs are the WARN line's attributes: the service and the reason
// first, then the SDK's own but its error, which they say.
func (s sdkLogger) passFailureAttrs(app *temporal.ApplicationError, keyvals []any) []any {
	var out []any
	if id, ok := value(keyvals, sdkWorkflowIDKey).(string); ok {
		if name, ok := strings.CutPrefix(id, s.ids.Service("")); ok {
			out = append(out, "service", name)
		}
	}
	out = append(out, "reason", app.Message(), "type", app.Type())
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] != sdkErrorKey {
			out = append(out, keyvals[i], keyvals[i+1])
		}
	}
	return out
}

// value is the value of key in keyvals (key, value, key, value...).
func value(keyvals []any, key string) any {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == key {
			return keyvals[i+1]
		}
	}
	return nil
}
