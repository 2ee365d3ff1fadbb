package worker

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"svcbridge/store"
	"svcbridge/workflows/temporalclient"
)

// WatchInterval is how often Watch probes: a few seconds, so a recovery is
// acted on within seconds, for a cost of two cheap requests.
const WatchInterval = 2 * time.Second

// Probe checks that one dependency of the reconciles answers.
type Probe struct {
	Name  string
	Check func(context.Context) error
}

// StoreProbe pings the database.
func StoreProbe(st *store.Store) Probe {
	return Probe{Name: "database", Check: st.Ping}
}

// KubeProbe asks the kube-apiserver's /readyz.
func KubeProbe(cs kubernetes.Interface) Probe {
	return Probe{Name: "kubernetes", Check: func(ctx context.Context) error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}}
}

// Recovered names the dependencies that were down at the previous probe
// and answer now. A dependency not probed before counts as up: the resync
// covers a worker's start.
func Recovered(prev, now map[string]bool) []string {
	var back []string
	for name, up := range now {
		if was, seen := prev[name]; up && seen && !was {
			back = append(back, name)
		}
	}
	slices.Sort(back)
	return back
}

// Watch probes every interval until ctx ends. When a dependency comes back
// after an outage it retries every service at once (RetryAll) instead of
// leaving each to its own backoff timer, which after a long outage has
// grown to minutes. Every worker replica may run it: the signals are
// idempotent, and each replica sends one per service per recovery.
func Watch(ctx context.Context, st *store.Store, wf temporalclient.Client, interval time.Duration, probes []Probe, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var prev map[string]bool
	for {
		now := make(map[string]bool, len(probes))
		for _, p := range probes {
			pctx, cancel := context.WithTimeout(ctx, interval)
			now[p.Name] = p.Check(pctx) == nil
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if back := Recovered(prev, now); len(back) > 0 {
			n, err := RetryAll(ctx, st, wf)
			if err != nil {
				// Keep prev as it was so the next probe tries again.
				log.Warn("dependency is back but the retry failed", "dependencies", back, "error", err)
				now = prev
			} else {
				log.Info("dependency is back; retried services", "dependencies", back, "services", n)
			}
		}
		prev = now
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetryAll signals every service a dependency outage may have left waiting
// on its backoff: failed services, unsettled ones (a failure the outage
// kept from being recorded), and deleted ones whose objects remain. It
// reports how many it signalled.
func RetryAll(ctx context.Context, st *store.Store, wf temporalclient.Client) (int, error) {
	var names []string
	err := st.InTx(ctx, func(tx *store.Tx) error {
		failed, err := tx.FailedServices(ctx)
		if err != nil {
			return err
		}
		unsettled, err := tx.UnsettledServices(ctx, time.Now().UTC())
		names = append(failed, unsettled...)
		return err
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return len(names), signalAll(ctx, wf, names)
}

// signalParallel bounds the signals in flight, so thousands of services
// cost Temporal a steady trickle rather than a burst.
const signalParallel = 8

// signalAll asks each named service's workflow to reconcile now.
func signalAll(ctx context.Context, wf temporalclient.Client, names []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(signalParallel)
	for _, n := range names {
		g.Go(func() error { return wf.ServiceChanged(gctx, n) })
	}
	return g.Wait()
}
