package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
)

// listsAgree checks that every way of listing the services answers what a
// write transaction, which never uses the cache, reads: the whole list in
// a read transaction, and the same list in pages of two.
func listsAgree(t *testing.T, s *store.Store) []service.Service {
	t.Helper()
	var want []service.Service
	mustTx(t, s, func(ctx context.Context, tx *store.Tx) (err error) {
		want, err = tx.ListServices(ctx)
		return err
	})
	var whole, paged []service.Service
	err := s.Read(context.Background(), func(tx *store.Tx) (err error) {
		ctx := context.Background()
		if whole, err = tx.ListServices(ctx); err != nil {
			return err
		}
		for after := ""; ; {
			page, err := tx.ServicesAfter(ctx, after, 2)
			if err != nil || len(page) == 0 {
				return err
			}
			paged, after = append(paged, page...), page[len(page)-1].Name
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range whole {
		if whole[i].Version == 0 || i >= len(paged) || paged[i].Version != whole[i].Version {
			t.Fatalf("service %d: versions %d whole and %+v paged, want one, not 0", i, whole[i].Version, paged)
		}
	}
	if !reflect.DeepEqual(withoutVersions(whole), want) {
		t.Fatalf("whole list read %+v, want %+v", whole, want)
	}
	if !reflect.DeepEqual(withoutVersions(paged), want) {
		t.Fatalf("pages read %+v, want %+v", paged, want)
	}
	return whole
}

// withoutVersions is svcs with Version 0, as a write transaction reads them.
func withoutVersions(svcs []service.Service) []service.Service {
	out := make([]service.Service, len(svcs))
	for i, svc := range svcs {
		svc.Version = 0
		out[i] = svc
	}
	return out
}

// versions are svcs' versions by name.
func versions(svcs []service.Service) map[string]int64 {
	out := map[string]int64{}
	for _, svc := range svcs {
		out[svc.Name] = svc.Version
	}
	return out
}

// TestListedServicesFollowEveryWrite: a service listed again after any
// write of it (its status, its spec and tags, a reconcile request, its
// delete and a create of the same name) is read as written, whole or in
// pages, however often it was listed before.
func TestListedServicesFollowEveryWrite(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for i, name := range []string{"svc-a", "svc-b", "svc-c", "svc-d", "svc-e"} {
				if err := tx.InsertService(ctx, externalService(name, 20000+i)); err != nil {
					return err
				}
			}
			return nil
		})
		listsAgree(t, s)
		last := versions(listsAgree(t, s)) // from the cache
		for _, step := range []struct {
			name    string
			written string
			write   func(ctx context.Context, tx *store.Tx) error
			check   func(svcs []service.Service) bool
		}{
			{"status", "svc-b", func(ctx context.Context, tx *store.Tx) error {
				_, err := tx.SetServiceStatus(ctx, "svc-b", store.PassResult{Generation: 1, Status: service.StatusReady})
				return err
			}, func(svcs []service.Service) bool { return svcs[1].ProvisioningStatus == service.StatusReady }},
			{"spec and tags", "svc-a", func(ctx context.Context, tx *store.Tx) error {
				svc, err := tx.GetService(ctx, "svc-a")
				if err != nil {
					return err
				}
				svc.Resource, svc.Tags = "198.51.100.7", []string{"edge", "eu"}
				return tx.UpdateService(ctx, &svc)
			}, func(svcs []service.Service) bool {
				return svcs[0].Resource == "198.51.100.7" && reflect.DeepEqual(svcs[0].Tags, []string{"edge", "eu"})
			}},
			{"reconcile request", "svc-c", func(ctx context.Context, tx *store.Tx) error {
				_, err := tx.RequestReconcile(ctx, "svc-c")
				return err
			}, func(svcs []service.Service) bool { return svcs[2].ReconcileRequest == 1 }},
			{"deleted and made again", "svc-d", func(ctx context.Context, tx *store.Tx) error {
				if err := tx.DeleteService(ctx, "svc-d", false); err != nil {
					return err
				}
				again := externalService("svc-d", 20010)
				again.Resource, again.Tags = "192.0.2.4", []string{"lab"}
				return tx.InsertService(ctx, again)
			}, func(svcs []service.Service) bool {
				return svcs[3].BridgePort == 20010 && svcs[3].Resource == "192.0.2.4"
			}},
			{"deleted", "svc-e", func(ctx context.Context, tx *store.Tx) error {
				return tx.DeleteService(ctx, "svc-e", false)
			}, func(svcs []service.Service) bool { return len(svcs) == 4 }},
		} {
			mustTx(t, s, step.write)
			svcs := listsAgree(t, s)
			if !step.check(svcs) {
				t.Fatalf("after the %s write the list reads %+v", step.name, svcs)
			}
			// A watch takes an unchanged version for an unchanged service.
			now := versions(svcs)
			for name, v := range now {
				if moved := v != last[name]; moved != (name == step.written) {
					t.Fatalf("after the %s write of %s, %s's version went %d -> %d", step.name, step.written, name, last[name], v)
				}
			}
			last = now
		}
	})
}

// TestListNeverServesARolledBackWrite: a service read inside a write
// transaction that rolled back is not what a later list reads, though on
// SQLite the next write gives the row the same version.
func TestListNeverServesARolledBackWrite(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertService(ctx, externalService("svc-a", 20000))
		})
		listsAgree(t, s)
		setResource := func(resource string, then func(ctx context.Context, tx *store.Tx) error) error {
			return inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				svc, err := tx.GetService(ctx, "svc-a")
				if err != nil {
					return err
				}
				svc.Resource = resource
				if err := tx.UpdateService(ctx, &svc); err != nil {
					return err
				}
				return then(ctx, tx)
			})
		}
		errRollback := errors.New("rolled back")
		err := setResource("198.51.100.1", func(ctx context.Context, tx *store.Tx) error {
			if _, err := tx.ListServices(ctx); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		if err := setResource("198.51.100.2", func(context.Context, *store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if svcs := listsAgree(t, s); svcs[0].Resource != "198.51.100.2" {
			t.Fatalf("listed resource %q, want the committed 198.51.100.2", svcs[0].Resource)
		}
	})
}

// TestListsBesideWritesSeeEachWriteOnce: lists read while services are
// rewritten, in parallel, see each service as one write left it (its
// resource and tags from the same write) and never older than a list
// before them saw it; once the writes stop, every list reads what they
// wrote.
func TestListsBesideWritesSeeEachWriteOnce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		s := storetest.Open(t, dialect)
		const services, writes, listers = 4, 30, 3
		mustTx(t, s, func(ctx context.Context, tx *store.Tx) error {
			for i := range services {
				if err := tx.InsertService(ctx, externalService(fmt.Sprintf("svc-%d", i), 20000+i)); err != nil {
					return err
				}
			}
			return nil
		})
		write := func(i, k int) error {
			return inTx(t, s, func(ctx context.Context, tx *store.Tx) error {
				svc, err := tx.GetService(ctx, fmt.Sprintf("svc-%d", i))
				if err != nil {
					return err
				}
				svc.Resource, svc.Tags = fmt.Sprintf("10.0.0.%d", k), []string{fmt.Sprintf("w%d", k)}
				return tx.UpdateService(ctx, &svc)
			})
		}
		// k of a listed service: its write's number, -1 before any.
		written := func(svc service.Service) (int, error) {
			if svc.Resource == "203.0.113.10" && len(svc.Tags) == 0 {
				return -1, nil
			}
			var k int
			if _, err := fmt.Sscanf(svc.Resource, "10.0.0.%d", &k); err != nil || !reflect.DeepEqual(svc.Tags, []string{fmt.Sprintf("w%d", k)}) {
				return 0, fmt.Errorf("%s read as resource %q, tags %q: not one write's", svc.Name, svc.Resource, svc.Tags)
			}
			return k, nil
		}
		var wg sync.WaitGroup
		done := make(chan struct{})
		errs := make(chan error, services+listers)
		for i := range services {
			wg.Go(func() {
				for k := range writes {
					if err := write(i, k); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		var listing sync.WaitGroup
		for range listers {
			listing.Go(func() {
				seen := map[string]int{}
				for {
					select {
					case <-done:
						return
					default:
					}
					err := s.Read(context.Background(), func(tx *store.Tx) error {
						svcs, err := tx.ListServices(context.Background())
						for _, svc := range svcs {
							k, werr := written(svc)
							if werr != nil {
								return werr
							}
							if prev, ok := seen[svc.Name]; ok && k < prev {
								return fmt.Errorf("%s read at write %d after write %d", svc.Name, k, prev)
							}
							seen[svc.Name] = k
						}
						return err
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(done)
		listing.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, svc := range listsAgree(t, s) {
			if k, err := written(svc); err != nil || k != writes-1 {
				t.Fatalf("after the writes %s reads write %d (%v), want %d", svc.Name, k, err, writes-1)
			}
		}
	})
}
