// Package activities does svcbridge's I/O for the workflows. Every activity
// is idempotent: it reads the current state and converges to it, so a retry
// or a repeat after a crash is harmless.
package activities

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"svcbridge/kube"
	"svcbridge/metrics"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/workflows/pass"
)

// Signaler queues agent reconciles (trigger.Trigger in production).
type Signaler interface {
	AgentsChanged(ctx context.Context, uuids ...string) error
}

// Activities holds what the activities need.
type Activities struct {
	Store        *store.Store
	Tags         service.TagRule
	ControlPlane service.ControlPlane
	Signaler     Signaler
	// Kube and KubeConfig reach the cluster on the Kubernetes control
	// plane; nil on the remote one.
	Kube       kubernetes.Interface
	KubeConfig kube.Config
}

// PlanService reads a service, places it again (the inventory may have
// changed since it was written) and stores that placement when it moved,
// and decides with service.PassReach which agents the pass reconciles and
// how many it queues. It reads on a snapshot, beside the writers: a
// placement rarely moves, and only then does it write.
func (a *Activities) PlanService(ctx context.Context, name string) (pass.Plan, error) {
	var plan pass.Plan
	var moved *service.Placement
	err := a.Store.Read(ctx, func(tx *store.Tx) error {
		plan, moved = pass.Plan{Kubernetes: a.ControlPlane.Kubernetes()}, nil
		svc, err := tx.GetService(ctx, name)
		var placed *service.Placement // nil: deleted
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Deleted: the connector's routers converge now, the (maybe
			// thousands of) listening agents through the queue.
		case err != nil:
			return err
		default:
			plan.Exists, plan.Generation, plan.ReconcileRequest = true, svc.Generation, svc.ReconcileRequest
			if at, ok := svc.AnsweredRequest(); ok {
				plan.RequestedAt = at
			}
			in, err := tx.PlacementInput(ctx, svc, a.ControlPlane)
			if err != nil {
				return err
			}
			p, perr := service.Place(in)
			if perr != nil {
				plan.Invalid = perr.Error()
			}
			if !p.SameSites(svc.Placement) {
				moved = &p
			}
			plan.ConnectorSite, plan.HubSite, plan.Endpoint = p.ConnectorSite, p.HubSite, p.Endpoint
			placed = &p
		}
		reach, err := a.passReach(ctx, tx, name, placed, svc.Tags)
		plan.Sites, plan.FanoutCount = reach.Sites, len(reach.Fanout)
		return err
	})
	if err != nil {
		return plan, err
	}
	if plan.Exists {
		metrics.Fanout.Observe(float64(plan.FanoutCount))
	}
	if moved == nil {
		return plan, nil
	}
	// The routers' queries read the stored placement. A newer generation
	// written since the snapshot keeps its own: its pass plans again.
	err = a.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.SetServicePlacement(ctx, name, plan.Generation, *moved)
	})
	return plan, err
}

// passReach decides with service.PassReach which routers a pass of the
// named service reaches, from where its objects are written, its
// placement (nil when it is deleted) and the agents its tags select.
func (a *Activities) passReach(ctx context.Context, tx *store.Tx, name string, p *service.Placement, tags []string) (service.Reach, error) {
	written, err := serviceWritten(ctx, tx, name)
	if err != nil {
		return service.Reach{}, err
	}
	var selecting []string
	if p != nil {
		if selecting, err = tx.AgentsWithTags(ctx, a.Tags.SelectingAgentTags(tags)); err != nil {
			return service.Reach{}, err
		}
	}
	return service.PassReach(written, p, selecting), nil
}

// serviceWritten is where svcbridge recorded writing a service's objects.
func serviceWritten(ctx context.Context, tx *store.Tx, name string) ([]service.Written, error) {
	entries, err := tx.ServiceEntries(ctx, name)
	out := make([]service.Written, len(entries))
	for i, e := range entries {
		out[i] = service.Written{Agent: e.Agent, Connector: e.Kind == store.KindConnector}
	}
	return out, err
}

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
	err = a.Store.InTx(ctx, func(tx *store.Tx) error {
		var in routerInputs
		if only == "" {
			all, err := a.gatherRouters(ctx, tx, []string{uuid})
			if err != nil {
				return err
			}
			in = all[uuid]
		} else if in, err = a.gatherService(ctx, tx, uuid, only); err != nil {
			return err
		}
		var w store.RouterWrite
		if res, w, err = a.routerWrite(ctx, tx, uuid, only, in, judge); err != nil {
			return err
		}
		return tx.WriteRouter(ctx, uuid, w)
	})
	return res, err
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
			case errors.As(err, &app) && app.Type() == pass.TypeInvalidPlacement:
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
		return res, w, temporal.NewApplicationError("agent "+in.router.Name+": "+err.Error(), pass.TypeInvalidPlacement, err)
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
			return res, w, temporal.NewApplicationError("agent "+in.router.Name+": "+err.Error(), pass.TypeInvalidPlacement, err)
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

// RecordSignalledReconcile records n reconcile signals that a person sent
// to the service's workflow outside svcbridge (the Temporal Web UI's Send a
// Signal) as the API records a reconcile request: counted on the service,
// so the pass that answers them reads their number, and an event each. A
// deleted service whose objects remain gets the events only, as from the
// API.
func (a *Activities) RecordSignalledReconcile(ctx context.Context, name string, n int) error {
	return a.Store.InTx(ctx, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		for range n {
			if err == nil {
				if _, err := tx.RequestReconcile(ctx, name); err != nil {
					return err
				}
			}
			if err := tx.RecordEvent(ctx, store.Event{Service: name, Type: store.EventNormal, Reason: store.ReasonReconcileRequested,
				Generation: svc.Generation, Message: SignalledReconcileMessage}); err != nil {
				return err
			}
		}
		return nil
	})
}

// SignalledReconcileMessage is the event of a reconcile signal sent
// outside svcbridge.
const SignalledReconcileMessage = "reconcile requested through a Temporal signal (the Web UI's Send a Signal, or the temporal CLI)"

// FinishService records the outcome of a reconcile: ready when the
// connector and the hub listener are in place, else failed with the reason,
// which it returns.
func (a *Activities) FinishService(ctx context.Context, f pass.Finish) (string, error) {
	var recorded bool
	var msg string
	err := a.Store.InTx(ctx, func(tx *store.Tx) error {
		msg = f.Error // from scratch on a retried transaction
		if msg == "" {
			written, err := serviceWritten(ctx, tx, f.Service)
			if err != nil {
				return err
			}
			msg = service.MissingObject(written, f.ConnectorSite, f.HubSite)
		}
		status, reason := service.StatusReady, (*string)(nil)
		if msg != "" {
			status, reason = service.StatusFailed, &msg
		}
		var err error
		recorded, err = tx.SetServiceStatus(ctx, f.Service, f.Generation, f.ReconcileRequest, status, reason, f.Endpoint, msg != "")
		if err != nil || !recorded {
			return err
		}
		if f.Fanout {
			if err := tx.SetFanoutPending(ctx, f.Service, f.Generation); err != nil {
				return err
			}
		}
		return tx.RecordReconciled(ctx, f.Service, f.Generation, reason)
	})
	if err != nil || !recorded {
		// Not recorded: deleted meanwhile, and the next reconcile cleans
		// up, or a newer generation's pass follows.
		return "", err
	}
	log := activity.GetLogger(ctx)
	if msg != "" {
		metrics.Reconciles.WithLabelValues(service.StatusFailed).Inc()
		log.Warn("service reconcile failed", "service", f.Service, "generation", f.Generation, "reason", msg)
		return msg, nil
	}
	metrics.Reconciles.WithLabelValues(service.StatusReady).Inc()
	if !f.Since.IsZero() {
		metrics.ReadyLatency.Observe(time.Since(f.Since).Seconds())
	}
	log.Info("service ready", "service", f.Service, "generation", f.Generation)
	return "", nil
}

// QueueFanout queues the agents a pass of the named service reaches
// beyond its sites (service.PassReach, read again with the placement the
// plan stored) and wakes the queue's workflow, queueChunk agents at a
// time, heartbeating after each chunk the last agent it queued: when its
// worker dies, Temporal retries it after FanoutHeartbeat rather than the
// whole StartToCloseTimeout, and the retry goes on after that agent (the
// list is sorted; an agent that joined the fan-out since, sorting before
// it, was queued by the change that made it join). Queueing an agent
// again is harmless: its marks coalesce.
func (a *Activities) QueueFanout(ctx context.Context, name string) error {
	var after string
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &after) != nil {
		after = ""
	}
	return a.queueFanout(ctx, name, after, func(last string) { activity.RecordHeartbeat(ctx, last) })
}

// queueFanout queues a pass's fan-out after the agent after ("" for all),
// telling queued the last agent of each chunk it queued.
func (a *Activities) queueFanout(ctx context.Context, name, after string, queued func(last string)) error {
	var reach service.Reach
	err := a.Store.Read(ctx, func(tx *store.Tx) error {
		svc, err := tx.GetService(ctx, name)
		var placed *service.Placement
		switch {
		case err == nil:
			placed = &svc.Placement
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		reach, err = a.passReach(ctx, tx, name, placed, svc.Tags)
		return err
	})
	if err != nil {
		return err
	}
	fanout := reach.Fanout
	if after != "" {
		i, found := slices.BinarySearch(fanout, after)
		if found {
			i++
		}
		fanout = fanout[i:]
	}
	if err := a.queueAgents(ctx, fanout, func(n int) { queued(fanout[n-1]) }); err != nil {
		return err
	}
	return a.Store.InTx(ctx, func(tx *store.Tx) error { return tx.FanoutQueued(ctx, name) })
}

// QueueAgents queues the agents a plan listed (Plan.Fanout), for runs of
// the service workflow begun by a release whose plans listed them.
func (a *Activities) QueueAgents(ctx context.Context, uuids []string) error {
	from := 0
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &from) != nil {
		from = 0
	}
	return a.queueAgents(ctx, uuids[min(from, len(uuids)):], func(n int) { activity.RecordHeartbeat(ctx, from+n) })
}

// FanoutHeartbeat is QueueFanout's heartbeat timeout: a chunk takes well
// under a second.
const FanoutHeartbeat = 15 * time.Second

// queueChunk is how many agents QueueFanout queues between heartbeats.
const queueChunk = 500

// queueAgents queues uuids a chunk at a time, telling queued how many it
// has queued after each.
func (a *Activities) queueAgents(ctx context.Context, uuids []string, queued func(n int)) error {
	for start := 0; start < len(uuids); start += queueChunk {
		end := min(start+queueChunk, len(uuids))
		if err := a.Signaler.AgentsChanged(ctx, uuids[start:end]...); err != nil {
			return err
		}
		queued(end)
	}
	return nil
}

// DrainParallel is how many groups of drainGroup agents one DrainAgents
// reconciles at once, each in one transaction (passRouters).
const DrainParallel = 4

// drainGroup is how many agents one transaction of a batch reconciles: a
// few statements read all of theirs, and their writes share a commit.
const drainGroup = 100

// AgentBatch is what one DrainAgents did, as the Web UI shows it.
type AgentBatch struct {
	Claimed int
	// Names are the first few reconciled agents' names.
	Names []string
	// Services counts the distinct services on the routers reconciled.
	Services int
	// Failed are "agent: reason" of the agents whose write failed; they
	// keep their mark and are claimed again after RetryFailedAgents.
	Failed []string
}

// batchNames is how many agent names an AgentBatch keeps.
const batchNames = 3

// DrainAgents claims up to limit queued agents, reconciles their routers,
// and clears the marks of those it reconciled.
func (a *Activities) DrainAgents(ctx context.Context, limit int) (AgentBatch, error) {
	var claimed []store.QueuedAgent
	err := a.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		claimed, err = tx.ClaimQueuedAgents(ctx, limit, 2*time.Minute)
		return err
	})
	if err != nil || len(claimed) == 0 {
		return AgentBatch{}, err
	}
	// Timed from the claim: a poll that found no agent is not a batch.
	defer func(start time.Time) { metrics.FanoutBatch.Observe(time.Since(start).Seconds()) }(time.Now())
	var mu sync.Mutex
	var done, retry []store.QueuedAgent
	names := make([]string, len(claimed))
	services := map[string]bool{}
	failed := make([]string, len(claimed))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DrainParallel)
	for first := 0; first < len(claimed); first += drainGroup {
		group := claimed[first:min(first+drainGroup, len(claimed))]
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				// The activity is cancelled (its worker stops, or its
				// heartbeat timed out): the agents not begun keep their
				// claim, and are claimed again when its lease ends.
				return err
			}
			uuids := make([]string, len(group))
			for i, q := range group {
				uuids[i] = q.Agent
			}
			res, errs, err := a.passRouters(gctx, uuids)
			mu.Lock()
			defer mu.Unlock()
			for i, q := range group {
				if err := cmp.Or(err, errs[i]); err != nil {
					activity.GetLogger(ctx).Warn("agent reconcile failed; retried in a few seconds", "agent", q.Agent, "error", err)
					failed[first+i] = q.Agent + ": " + pass.Reason(err)
					retry = append(retry, q)
					continue
				}
				names[first+i] = cmp.Or(res[i].Name, q.Agent)
				for _, s := range res[i].Services {
					services[s] = true
				}
				done = append(done, q)
			}
			activity.RecordHeartbeat(ctx, len(done))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return AgentBatch{}, err
	}
	batch := AgentBatch{Claimed: len(claimed), Services: len(services),
		Names: firstN(names, batchNames), Failed: firstN(failed, len(failed))}
	return batch, a.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.DoneQueuedAgents(ctx, done); err != nil {
			return err
		}
		return tx.RetryQueuedAgents(ctx, retry, time.Now().Add(RetryFailedAgents))
	})
}

// RetryFailedAgents is how soon an agent whose router write failed is
// claimed again (the agent queue's workflow looks again as soon).
const RetryFailedAgents = 5 * time.Second

// firstN returns the first n non-empty strings of list.
func firstN(list []string, n int) []string {
	var out []string
	for _, s := range list {
		if s != "" && len(out) < n {
			out = append(out, s)
		}
	}
	return out
}
