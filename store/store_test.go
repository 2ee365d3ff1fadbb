package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"svcbridge/inventory"
	"svcbridge/pgtest"
	"svcbridge/routerconfig"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// forEachDialect runs f as a parallel subtest per dialect.
func forEachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// url returns a fresh database of the dialect for tests that open it
// themselves.
func url(t *testing.T, dialect string) string {
	if dialect == store.Postgres {
		return pgtest.NewDB(t)
	}
	return filepath.Join(t.TempDir(), "svcbridge.db")
}

func inTx(t *testing.T, s *store.Store, fn func(ctx context.Context, tx *store.Tx) error) error {
	t.Helper()
	ctx := context.Background()
	return s.InTx(ctx, func(tx *store.Tx) error { return fn(ctx, tx) })
}

func mustTx(t *testing.T, s *store.Store, fn func(ctx context.Context, tx *store.Tx) error) {
	t.Helper()
	if err := inTx(t, s, fn); err != nil {
		t.Fatal(err)
	}
}

func agent(id, name, mode string, defaultRouter bool) *inventory.Agent {
	return &inventory.Agent{UUID: id, Name: name, RouterMode: mode, DefaultRouter: defaultRouter,
		Tags: []string{}, UpstreamRouters: []string{}}
}

func externalService(name string, port int) *service.Service {
	return &service.Service{
		Spec: service.Spec{Name: name, Type: service.TypeExternal, Resource: "203.0.113.10",
			TargetPort: 443, DefaultBridge: "default-router", Tags: []string{}},
		BridgePort: port,
	}
}

// createHub stores the agent a-1, an interior router.
func createHub(ctx context.Context, tx *store.Tx) error {
	hub := &inventory.Agent{UUID: "a-1", Name: "hub", RouterMode: inventory.RouterInterior, Tags: []string{}, UpstreamRouters: []string{}}
	return tx.CreateAgent(ctx, hub, "hash")
}

// listener is a service's listener as a router's row holds it.
func listener(name string) []routerconfig.Held {
	return []routerconfig.Held{{Kind: store.KindListener, Service: name, JSON: []byte(`{}`)}}
}
