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

// TestAnAgentReadsAlikeEveryWay: an agent read by name, by uuid, for one
// (a service's GET, a pass) or in the list is the same agent: its tags and
// upstream routers in their stored order, empty lists where it has none;
// and a reference that is one agent's name and another's uuid names the
// first, as every request resolves it.
func TestAnAgentReadsAlikeEveryWay(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		hub := agent("a-1", "hub", inventory.RouterInterior, true)
		edge := agent("a-2", "edge", inventory.RouterEdge, false)
		edge.Tags, edge.UpstreamRouters = []string{"zone: b", "zone: a", "checkout"}, []string{"a-3", "a-1"}
		core := agent("a-3", "a-2", inventory.RouterInterior, false) // named as edge's uuid
		core.UpstreamRouters = []string{"a-1"}
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for i, a := range []*inventory.Agent{hub, core, edge} {
				if err := tx.CreateAgent(ctx, a, fmt.Sprint("h", i)); err != nil {
					return err
				}
			}
			return nil
		})
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			listed, err := tx.ListAgents(ctx)
			if err != nil {
				return err
			}
			for i, want := range []*inventory.Agent{core, edge, hub} { // by name
				got := map[string]func() (inventory.Agent, error){
					"listed":       func() (inventory.Agent, error) { return listed[i], nil },
					"by name":      func() (inventory.Agent, error) { return tx.GetAgent(ctx, want.Name) },
					"by uuid only": func() (inventory.Agent, error) { return tx.AgentByUUID(ctx, want.UUID) },
				}
				if want != edge { // edge's uuid is core's name
					got["by uuid"] = func() (inventory.Agent, error) { return tx.GetAgent(ctx, want.UUID) }
				}
				for how, read := range got {
					a, err := read()
					if err != nil {
						return fmt.Errorf("%s %s: %w", want.Name, how, err)
					}
					if a.UUID != want.UUID || a.Name != want.Name || a.RouterMode != want.RouterMode || a.DefaultRouter != want.DefaultRouter ||
						a.Tags == nil || !slices.Equal(a.Tags, want.Tags) || a.UpstreamRouters == nil || !slices.Equal(a.UpstreamRouters, want.UpstreamRouters) {
						t.Errorf("%s %s: %+v, want %+v", want.Name, how, a, *want)
					}
				}
			}
			if a, err := tx.GetAgent(ctx, "a-2"); err != nil || a.UUID != core.UUID {
				t.Errorf(`GetAgent("a-2") = %s (%v), want the agent named a-2 (%s), not the one with that uuid`, a.UUID, err, core.UUID)
			}
			if id, err := tx.AgentUUID(ctx, "a-2"); err != nil || id != core.UUID {
				t.Errorf(`AgentUUID("a-2") = %s (%v), want %s`, id, err, core.UUID)
			}
			if id, err := tx.AgentUUID(ctx, "edge"); err != nil || id != edge.UUID {
				t.Errorf(`AgentUUID("edge") = %s (%v), want %s`, id, err, edge.UUID)
			}
			if _, err := tx.GetAgent(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf(`GetAgent("nobody"): %v, want ErrNotFound`, err)
			}
			return nil
		})
	})
}
