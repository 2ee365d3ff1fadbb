package api

import (
	"context"
	"errors"

	"github.com/gin-gonic/gin"
)

// Dry runs (?dryRun=true, as Kubernetes' dryRun=All): a write runs its
// very transaction, validation and allocation included, answers what it
// would have answered, and rolls back; no reconcile starts. So a dry run
// obeys the rules of the real write because it is the real write, not a
// second copy of its checks.

// DryRunHeader is set on the answer of a dry run: a server that ignored
// the parameter would not set it.
const DryRunHeader = "X-Dry-Run"

type dryRunKey struct{}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run: rolled back")

// dryRun reads ?dryRun= ("true" or Kubernetes' "All"; "false" or absent:
// a real write) into the request's context, where inTx and the
// Reconciler find it.
func dryRun(c *gin.Context) {
	switch c.Query("dryRun") {
	case "", "false":
	case "true", "All":
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), dryRunKey{}, true))
		c.Header(DryRunHeader, "true")
	default:
		fail(c, badRequest("Query parameter 'dryRun' must be true or false"))
		return
	}
	c.Next()
}

// isDryRun reports whether ctx is a dry run's request (or derived from
// one, as reconcileCtx is).
func isDryRun(ctx context.Context) bool {
	v, _ := ctx.Value(dryRunKey{}).(bool)
	return v
}

// dryRunReconciler starts no durable work for a dry run.
type dryRunReconciler struct{ Reconciler }

func (r dryRunReconciler) ServiceChanged(ctx context.Context, name string) error {
	if isDryRun(ctx) {
		return nil
	}
	return r.Reconciler.ServiceChanged(ctx, name)
}

func (r dryRunReconciler) ServiceCreated(ctx context.Context, name string) error {
	if isDryRun(ctx) {
		return nil
	}
	return r.Reconciler.ServiceCreated(ctx, name)
}

func (r dryRunReconciler) AgentsQueued(ctx context.Context, uuids ...string) error {
	if isDryRun(ctx) {
		return nil
	}
	return r.Reconciler.AgentsQueued(ctx, uuids...)
}
