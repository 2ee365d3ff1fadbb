package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// Every write of a service wakes the waits on it, once it commits: on the
// store that wrote it and, through the change feed, on another process's;
// a wait on another service sleeps on.
func TestWatchServiceWakesOnEveryWrite(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		writer, watchers := replicas(t, dialect)
		mustTx(t, writer, func(ctx context.Context, tx *store.Tx) error {
			if err := createHub(ctx, tx); err != nil {
				return err
			}
			for i, name := range []string{"web", "other"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
			}
			return nil
		})
		if dialect == store.Postgres {
			// A replica's first wait starts its listener (the writer's
			// too: it is a replica as well); a change committed before it
			// listens is seen by a long poll's reads alone. A listener
			// listens to the services' channel before the last, the
			// listed changes'.
			for _, w := range watchers {
				_, stop := w.WatchService("web")
				stop()
			}
			eventually(t, 10*time.Second, "both replicas listening", func() error {
				var n int
				err := writer.Read(context.Background(), func(tx *store.Tx) error {
					return tx.Get(context.Background(), &n, `SELECT count(*) FROM pg_stat_activity
						WHERE datname = current_database() AND query LIKE 'LISTEN%svcbridge_listed%'`)
				})
				if err == nil && n != len(watchers) {
					err = fmt.Errorf("%d listening", n)
				}
				return err
			})
		}
		for _, step := range []struct {
			name  string
			write func(ctx context.Context, tx *store.Tx) error
		}{
			{"its pass's outcome", func(ctx context.Context, tx *store.Tx) error {
				_, err := tx.SetServiceStatus(ctx, "web", store.PassResult{Generation: 1, Status: service.StatusReady})
				return err
			}},
			{"its listener written on a router", func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Write: listener("web")})
			}},
			{"its spec", func(ctx context.Context, tx *store.Tx) error {
				svc, err := tx.GetService(ctx, "web")
				if err != nil {
					return err
				}
				svc.TargetPort = 8443
				return tx.UpdateService(ctx, &svc)
			}},
			{"its placement", func(ctx context.Context, tx *store.Tx) error {
				return tx.SetServicePlacement(ctx, "web", 2, service.Placement{OnDefaultRouter: true})
			}},
			{"a reconcile asked for", func(ctx context.Context, tx *store.Tx) error {
				_, err := tx.RequestReconcile(ctx, "web")
				return err
			}},
			{"a reconcile asked for by an agent's change", func(ctx context.Context, tx *store.Tx) error {
				return tx.RequestReconcilesFor(ctx, []string{"web"}, "reconcile requested by a change of agent hub")
			}},
			{"its fan-out queued", func(ctx context.Context, tx *store.Tx) error {
				return tx.FanoutQueued(ctx, "web")
			}},
			{"its deletion", func(ctx context.Context, tx *store.Tx) error {
				return tx.DeleteService(ctx, "web", true)
			}},
			{"its cluster objects removed", func(ctx context.Context, tx *store.Tx) error {
				return tx.ClearDeletion(ctx, "web")
			}},
			{"its listener dropped", func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Drop: listener("web")})
			}},
		} {
			t.Run(step.name, func(t *testing.T) {
				type watch struct {
					web, other <-chan struct{}
				}
				var watches []watch
				for _, w := range watchers {
					web, stopWeb := w.WatchService("web")
					other, stopOther := w.WatchService("other")
					t.Cleanup(stopWeb)
					t.Cleanup(stopOther)
					watches = append(watches, watch{web, other})
				}
				mustTx(t, writer, step.write)
				for i, w := range watches {
					select {
					case <-w.web:
					case <-time.After(10 * time.Second):
						t.Fatalf("store %d: the wait on web was not woken", i)
					}
				}
				for i, w := range watches {
					select {
					case <-w.other:
						t.Errorf("store %d: the wait on other was woken by a write of web", i)
					default:
					}
				}
			})
		}
	})
}

// A rolled-back write wakes no wait: the feed applies a transaction's
// changes after its commit (and PostgreSQL delivers its NOTIFY only then).
func TestWatchServiceSleepsThroughARollback(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertService(ctx, externalService("web", 20000))
		})
		// A listener wakes every wait as it begins to listen (it may have
		// missed changes): it listens before this wait begins.
		eventually(t, 10*time.Second, "the change feed current", func() error {
			if !s.FeedCurrent() {
				return errors.New("not current")
			}
			return nil
		})
		web, stop := s.WatchService("web")
		defer stop()
		rolledBack := errors.New("rolled back")
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if _, err := tx.SetServiceStatus(ctx, "web", store.PassResult{Generation: 1, Status: service.StatusReady}); err != nil {
				return err
			}
			return rolledBack
		})
		if !errors.Is(err, rolledBack) {
			t.Fatal(err)
		}
		select {
		case <-web:
			t.Fatal("a rolled-back write woke the wait")
		case <-time.After(200 * time.Millisecond):
		}
	})
}
