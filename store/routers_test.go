package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

func TestChangeFlags(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		var first, second store.Changes
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "h"); err != nil {
				return err
			}
			var err error
			first, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		// Two writes within the same millisecond still order.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(routerconfig.Empty)}); err != nil {
				return err
			}
			var err error
			second, err = tx.AgentChanges(ctx, "a-1")
			return err
		})
		if second.LastUpdated <= first.LastUpdated {
			t.Fatalf("lastUpdated did not grow: %d then %d", first.LastUpdated, second.LastUpdated)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.AckChanges(ctx, "a-1", first.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || !ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the older change: %+v, %v", ch, err)
			}
			if err := tx.AckChanges(ctx, "a-1", second.LastUpdated); err != nil {
				return err
			}
			if ch, err := tx.AgentChanges(ctx, "a-1"); err != nil || ch.MicroserviceConfig {
				return fmt.Errorf("after acknowledging the current change: %+v, %v", ch, err)
			}
			if err := tx.WriteRouter(ctx, "nope", store.RouterWrite{Base: []byte(routerconfig.Empty)}); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("write to an agent without router: %v", err)
			}
			return nil
		})
	})
}

// A change of a router's document takes the router's lock with its
// transaction's last writes: a pass of another service on the router
// commits while the first, its write done, is still open; each change is
// numbered in commit order, and each entry by the change that made it
// visible, so acknowledging the first commit does not acknowledge the
// second.
func TestRouterChangesWaitForEachOtherOnlyAtCommit(t *testing.T) {
	s := storetest.Open(t, store.Postgres)
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		return tx.CreateAgent(ctx, agent("h-1", "hub", inventory.RouterInterior, true), "h")
	})
	listener := func(svc string) store.RouterWrite {
		return store.RouterWrite{Write: []routerconfig.Held{{Kind: store.KindListener, Service: svc, JSON: []byte(`{}`)}},
			Rewritten: map[string]bool{store.KindListener + "/" + svc: true}, Changed: true}
	}
	ctx := context.Background()
	wrote, release, first := make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		first <- s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.WriteRouter(ctx, "h-1", listener("a")); err != nil {
				return err
			}
			select {
			case wrote <- struct{}{}:
			default:
			}
			<-release
			return nil
		})
	}()
	<-wrote
	second := make(chan error, 1)
	go func() {
		second <- inTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.WriteRouter(ctx, "h-1", listener("b")) })
	}()
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("b's change waited for a's open transaction")
	}
	var afterB store.Changes
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
		afterB, err = tx.AgentChanges(ctx, "h-1")
		return err
	})
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
		if err := tx.AckChanges(ctx, "h-1", afterB.LastUpdated); err != nil {
			return err
		}
		es, err := tx.AgentListeners(ctx, "h-1")
		if err != nil {
			return err
		}
		if len(es) != 2 || es[0].Service != "a" || es[1].Service != "b" {
			return fmt.Errorf("listeners %+v, want a and b", es)
		}
		if a, b := es[0], es[1]; b.ChangeSeq != afterB.LastUpdated || a.ChangeSeq <= b.ChangeSeq || a.Acknowledged() || !b.Acknowledged() {
			return fmt.Errorf("a numbered %d (acknowledged %v), b %d (acknowledged %v), b's change %d: want a after b, b alone acknowledged",
				a.ChangeSeq, a.Acknowledged(), b.ChangeSeq, b.Acknowledged(), afterB.LastUpdated)
		}
		return nil
	})
}
