package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// TestOneDefaultRouter: the partial unique index, not the handlers' check,
// is what finally keeps a second default router out.
func TestOneDefaultRouter(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "h1"); err != nil {
				return err
			}
			// Many agents that are not the default router are fine.
			if err := tx.CreateAgent(ctx, agent("a-2", "core", inventory.RouterInterior, false), "h2"); err != nil {
				return err
			}
			return tx.CreateAgent(ctx, agent("a-3", "core-2", inventory.RouterInterior, false), "h3")
		})
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-4", "hub-2", inventory.RouterInterior, true), "h4")
		})
		if !store.IsConflict(err, store.AgentDefaultRouterKey) {
			t.Fatalf("second default router by insert: err = %v, want a conflict on %s", err, store.AgentDefaultRouterKey)
		}
		err = inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.GetAgent(ctx, "core")
			if err != nil {
				return err
			}
			a.DefaultRouter = true
			return tx.UpdateAgent(ctx, &a)
		})
		if !store.IsConflict(err, store.AgentDefaultRouterKey) {
			t.Fatalf("second default router by update: err = %v, want a conflict on %s", err, store.AgentDefaultRouterKey)
		}
		// Moving the role in one transaction works.
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for _, step := range []struct {
				name string
				def  bool
			}{{"hub", false}, {"core", true}} {
				a, err := tx.GetAgent(ctx, step.name)
				if err != nil {
					return err
				}
				a.DefaultRouter = step.def
				if err := tx.UpdateAgent(ctx, &a); err != nil {
					return err
				}
			}
			d, err := tx.DefaultRouter(ctx)
			if err == nil && d.Name != "core" {
				err = fmt.Errorf("default router = %s, want core", d.Name)
			}
			return err
		})
	})
}

// TestAgentRows covers what the handlers rely on: duplicate names as a
// named conflict, a router config and a raised flag for routers, lookup by
// token hash, and the references that block a delete.
func TestAgentRows(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "hub", inventory.RouterInterior, true), "h1"); err != nil {
				return err
			}
			edge := agent("a-2", "plant-a", inventory.RouterEdge, false)
			edge.Tags = []string{"b", "a"}
			edge.UpstreamRouters = []string{"a-1"}
			if err := tx.CreateAgent(ctx, edge, "h2"); err != nil {
				return err
			}
			return tx.CreateAgent(ctx, agent("a-3", "sensor", inventory.RouterNone, false), "h3")
		})
		err := inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateAgent(ctx, agent("a-9", "plant-a", inventory.RouterEdge, false), "h9")
		})
		if !store.IsConflict(err, store.AgentNameKey) {
			t.Fatalf("duplicate name: err = %v, want a conflict on %s", err, store.AgentNameKey)
		}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			a, err := tx.AgentByTokenHash(ctx, "h2")
			if err != nil || a.Name != "plant-a" {
				return fmt.Errorf("AgentByTokenHash = %+v, %v", a, err)
			}
			if _, err := tx.AgentByTokenHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("unknown hash: err = %v", err)
			}
			a, err = tx.GetAgent(ctx, "a-2")
			if err != nil || !slices.Equal(a.Tags, []string{"b", "a"}) || !slices.Equal(a.UpstreamRouters, []string{"a-1"}) {
				return fmt.Errorf("GetAgent by uuid = %+v, %v (tags keep their order)", a, err)
			}
			// A new router's config: no bridges, and its site (its
			// uplink to its upstream router, dialled by name without a host).
			cfg, err := tx.RouterConfig(ctx, "a-2")
			want, _, _ := routerconfig.WithSite([]byte(routerconfig.Empty), routerconfig.Site{ID: "a-2", Mode: routerconfig.ModeEdge,
				Links: []routerconfig.Link{{Name: "a-1", Host: "hub", Port: routerconfig.EdgePort, Role: routerconfig.RoleEdge}}})
			if err != nil || string(cfg) != string(want) {
				return fmt.Errorf("router config = %s, %v; want %s", cfg, err, want)
			}
			if ch, err := tx.AgentChanges(ctx, "a-2"); err != nil || !ch.MicroserviceConfig {
				return fmt.Errorf("new router's changes = %+v, %v", ch, err)
			}
			if _, err := tx.RouterConfig(ctx, "a-3"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("routerMode none has a config: %v", err)
			}
			hub, err := tx.GetAgent(ctx, "hub")
			if err != nil {
				return err
			}
			refs, err := tx.AgentReferences(ctx, hub)
			if err != nil || !slices.Equal(refs, []string{"agents plant-a use it as upstream router"}) {
				return fmt.Errorf("hub references = %q, %v", refs, err)
			}
			return nil
		})
		// The foreign key is the last line: a referenced agent cannot go.
		err = inTx(t, s, func(ctx context.Context, tx *store.Tx) error { return tx.DeleteAgent(ctx, "a-1") })
		if !store.IsConflict(err, store.ForeignKey) {
			t.Fatalf("delete of a referenced agent: err = %v, want a foreign key conflict", err)
		}
	})
}
