package activities

import (
	"context"
	"errors"
	"sort"

	"go.temporal.io/sdk/temporal"

	"svcbridge/metrics"
	"svcbridge/reconcile"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
)

// ReconcileAgents makes the objects of one service right on the routers
// of the given agents (the service's sites), one transaction per router;
// what else the routers hold is not read, so the cost does not grow with
// it. (Its name is in running workflows' histories.)
func (a *Activities) ReconcileAgents(ctx context.Context, name string, sites []string) error {
	for _, u := range sites {
		if _, err := a.reconcileRouter(ctx, u, name); err != nil {
			return err
		}
	}
	return nil
}

// routerResult is what reconcileRouter did to one agent's router.
type routerResult struct {
	Name string
	// Services are those the router holds a listener or connector of.
	Services []string
	// Changes are what changed in the document (nil when nothing).
	Changes []string
	// Repair: asked of a drift pass, whether its changes repaired the
	// router (see isRepair).
	Repair bool
}

// errWholeRouter stops a pass over one service's objects that would have
// to rewrite the router's base document, which only a pass holding the
// whole router may do.
var errWholeRouter = errors.New("the base document changes: the pass needs the whole router")

// reconcileRouter makes what svcbridge holds on an agent's router match the
// services: all of them, or only the service named only. It holds the
// router's lock while it reads the services and writes, so concurrent
// reconciles queue and the last sees everything committed before it: the
// whole router's for a whole pass, the service's (and the router's shared)
// for one service's, so that one service's pass never waits for another's.
func (a *Activities) reconcileRouter(ctx context.Context, uuid, only string) (routerResult, error) {
	res, err := a.passRouter(ctx, uuid, only, false)
	if errors.Is(err, errWholeRouter) {
		// Rare: svcbridge's objects left in the base by a release before
		// router objects were rows.
		return a.passRouter(ctx, uuid, "", false)
	}
	return res, err
}

// passRouter is reconcileRouter's pass; with judge, a changing pass also
// says whether it repairs the router (Repair).
func (a *Activities) passRouter(ctx context.Context, uuid, only string, judge bool) (res routerResult, err error) {
	err = a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		res, err = a.routerPass(ctx, tx, uuid, only, judge)
		return err
	})
	return res, err
}

// routerPass is passRouter's pass in tx.
func (a *Activities) routerPass(ctx context.Context, tx *store.Tx, uuid, only string, judge bool) (routerResult, error) {
	var in routerInputs
	if only == "" {
		all, err := a.gatherRouters(ctx, tx, []string{uuid})
		if err != nil {
			return routerResult{}, err
		}
		in = all[uuid]
	} else {
		var err error
		if in, err = a.gatherService(ctx, tx, uuid, only); err != nil {
			return routerResult{}, err
		}
	}
	res, w, err := a.routerWrite(ctx, tx, uuid, only, in, judge)
	if err != nil {
		return res, err
	}
	return res, tx.WriteRouter(ctx, uuid, w)
}

// passRouters is a whole-router pass over each of uuids in one
// transaction, its reads a few statements for all of them: the agent
// queue's batches. An agent whose document cannot be planned fails alone
// (errs); any other error fails them all.
func (a *Activities) passRouters(ctx context.Context, uuids []string) (res []routerResult, errs []error, err error) {
	res, errs = make([]routerResult, len(uuids)), make([]error, len(uuids))
	err = a.Store.InTx(ctx, func(tx *store.Tx) error {
		clear(res) // a retried transaction starts over
		clear(errs)
		all, err := a.gatherRouters(ctx, tx, uuids)
		if err != nil {
			return err
		}
		writes := make(map[string]store.RouterWrite, len(uuids))
		for i, u := range uuids {
			var w store.RouterWrite
			res[i], w, err = a.routerWrite(ctx, tx, u, "", all[u], false)
			var app *temporal.ApplicationError
			switch {
			case errors.As(err, &app) && app.Type() == reconcile.TypeInvalidPlacement:
				errs[i] = err
			case err != nil:
				return err
			default:
				writes[u] = w
			}
		}
		return tx.WriteRouters(ctx, writes)
	})
	return res, errs, err
}

// routerInputs is what a pass over one router reads: the router (nil
// when the agent has none), what svcbridge holds on it, and the services
// whose objects belong there.
type routerInputs struct {
	router     *store.Router
	have       []routerconfig.Held
	listeners  []service.ListenerWant
	connectors []service.ConnectorWant
	// site is the router's own part of the document (service.PlanSite),
	// which only a whole-router pass writes; nil in a pass over one
	// service's objects.
	site *routerconfig.Site
}

// gatherRouters reads the inputs of whole-router passes over uuids,
// holding their routers' locks (LockRouters).
func (a *Activities) gatherRouters(ctx context.Context, tx *store.Tx, uuids []string) (map[string]routerInputs, error) {
	routers, err := tx.LockRouters(ctx, uuids)
	if err != nil {
		return nil, err
	}
	have, err := tx.RoutersObjects(ctx, uuids)
	if err != nil {
		return nil, err
	}
	selections, modes := map[string]store.Selection{}, map[string]string{}
	for u, r := range routers {
		tokens, all := a.Tags.AgentTokens(r.Tags)
		selections[u], modes[u] = store.Selection{Tokens: tokens, All: all}, r.RouterMode
	}
	listeners, err := tx.ListenerServicesOf(ctx, selections, "")
	if err != nil {
		return nil, err
	}
	connectors, err := tx.ConnectorServicesOf(ctx, modes, "")
	if err != nil {
		return nil, err
	}
	sites, err := tx.RouterSites(ctx, uuids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]routerInputs, len(uuids))
	for _, u := range uuids {
		in := routerInputs{have: have[u]}
		if r, ok := routers[u]; ok {
			in.router, in.listeners, in.connectors = &r, listeners[u], connectors[u]
			if st, ok := sites[u]; ok {
				site := service.PlanSite(st.Agent, st.Upstreams, st.Default)
				in.site = &site
			}
		}
		out[u] = in
	}
	return out, nil
}

// gatherService reads the inputs of a pass over one service's objects on
// an agent's router, holding the router's lock shared (ShareRouter).
func (a *Activities) gatherService(ctx context.Context, tx *store.Tx, uuid, only string) (in routerInputs, err error) {
	router, err := tx.ShareRouter(ctx, uuid, only)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return in, err
	}
	if in.have, err = tx.RouterObjects(ctx, uuid, only); err != nil || !found {
		return in, err
	}
	in.router = &router
	tokens, all := a.Tags.AgentTokens(router.Tags)
	if in.listeners, err = tx.ListenerServices(ctx, uuid, tokens, all, only); err != nil {
		return in, err
	}
	in.connectors, err = tx.ConnectorServices(ctx, uuid, router.RouterMode, only)
	return in, err
}

// routerWrite plans one router's pass from what was gathered: what the
// router's write changes. An agent with no router (routerMode none, or no
// agent) holds nothing.
func (a *Activities) routerWrite(ctx context.Context, tx *store.Tx, uuid, only string, in routerInputs, judge bool) (res routerResult, w store.RouterWrite, err error) {
	if in.router == nil {
		return res, store.RouterWrite{Drop: in.have}, nil
	}
	var scope []string
	if only != "" {
		scope = []string{only}
	}
	res.Name = in.router.Name
	plan, err := service.PlanRouter(in.router.Base, in.have, in.listeners, in.connectors, scope)
	if err != nil {
		// A document that is not JSON is not ours to guess at; retried,
		// as someone may fix it.
		return res, w, temporal.NewApplicationError("agent "+in.router.Name+": "+err.Error(), reconcile.TypeInvalidPlacement, err)
	}
	if plan.BaseChanged && only != "" {
		return res, w, errWholeRouter
	}
	objectsInBase := plan.BaseChanged
	siteChanged := false
	if in.site != nil {
		base := in.router.Base
		if plan.BaseChanged {
			base = plan.Base
		}
		withSite, changed, err := routerconfig.WithSite(base, *in.site)
		if err != nil {
			return res, w, temporal.NewApplicationError("agent "+in.router.Name+": "+err.Error(), reconcile.TypeInvalidPlacement, err)
		}
		if changed {
			plan.Base, plan.BaseChanged, siteChanged = withSite, true, true
		}
	}
	if plan.Changed() || plan.BaseChanged {
		metrics.RouterWrites.WithLabelValues("agent").Inc()
		res.Changes = describe(plan, siteChanged)
		if judge {
			edited := siteChanged && routerconfig.HasSite(in.router.Base)
			if res.Repair, err = isRepair(ctx, tx, uuid, plan.Touched, objectsInBase, edited); err != nil {
				return res, w, err
			}
		}
	}
	res.Services = append(append(res.Services, plan.Listeners...), plan.Connectors...)
	w = store.RouterWrite{Write: plan.Write, Rewritten: plan.Rewritten, Drop: plan.Delete, Changed: plan.Changed()}
	if plan.BaseChanged {
		w.Base = plan.Base
	}
	return res, w, nil
}

// isRepair reports whether a whole-router plan repairs the router, rather
// than does early what a reconcile under way was about to do: the agent is
// queued, or every service whose objects change is pending or deleted with
// objects left (a burst of creates, or of deletes, is not drift).
// svcbridge's objects found in the base document (objectsInBase) are
// always a repair; a site that differs from the one svcbridge wrote
// (siteEdited) is one unless the agent is queued (its own change, or an
// upstream router's, moved it). A router given its first site is not
// drift. It is asked before the pass
// writes: once written, a deleted service's objects are gone and it no
// longer looks under way.
func isRepair(ctx context.Context, tx *store.Tx, agent string, touched []string, objectsInBase, siteEdited bool) (bool, error) {
	if objectsInBase {
		return true, nil
	}
	queued, err := tx.AgentQueued(ctx, agent)
	if err != nil || queued {
		return false, err
	}
	if siteEdited {
		return true, nil
	}
	underWay, err := tx.UnsettledAmong(ctx, touched)
	return len(underWay) < len(touched), err
}

// describe lists a plan's changes: objects written or rewritten, objects
// removed, or svcbridge's objects taken out of the base document alone.
func describe(plan service.RouterPlan, siteChanged bool) []string {
	var out []string
	for k := range plan.Rewritten {
		out = append(out, "wrote "+k)
	}
	sort.Strings(out)
	for _, k := range plan.Removed {
		out = append(out, "removed "+k)
	}
	if siteChanged {
		out = append(out, "wrote the router's id, mode, listeners and links")
	}
	if len(out) == 0 {
		out = []string{"moved svcbridge's objects out of the base document"}
	}
	return out
}
