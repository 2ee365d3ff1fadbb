package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"svcbridge/inventory"
	"svcbridge/routerconfig"
	"svcbridge/store"
	"svcbridge/wire"
)

// pollView is what an agent's poll reads, through the poll cache.
type pollView struct {
	agent   string // the credential's agent, "" when refused
	mode    string
	changes store.Changes
	version string // "" without a router
}

// readPoll reads what an agent's poll reads: its credential's agent, its
// change flags and its router version.
func readPoll(ctx context.Context, s *store.Store, hash, uuid string) (pollView, error) {
	var v pollView
	a, err := s.AgentByToken(ctx, hash)
	switch {
	case err == nil:
		v.agent, v.mode = a.Name, a.RouterMode
	case !errors.Is(err, store.ErrNotFound):
		return v, err
	}
	if v.changes, err = s.PolledChanges(ctx, uuid); err != nil {
		return v, err
	}
	v.version, err = s.PolledRouterVersion(ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		v.version, err = "", nil
	}
	return v, err
}

// eventually retries check until it passes, failing after wait.
func eventually(t *testing.T, wait time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %s", what, err, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fromMemory checks that reading what an agent's poll reads needs no
// connection of s (once the feed allows it). What is not there (a refused
// credential, an agent without a router) is read each time.
func fromMemory(s *store.Store, hash, uuid string) error {
	v, err := readPoll(context.Background(), s, hash, uuid)
	if err != nil {
		return err
	}
	if v.agent == "" || v.version == "" {
		return fmt.Errorf("%s holds no credential %s with a router: %+v", uuid, hash, v)
	}
	err = store.Starved(s, 200*time.Millisecond, func(ctx context.Context) error {
		_, err := readPoll(ctx, s, hash, uuid)
		return err
	})
	if err != nil {
		return fmt.Errorf("a repeated poll read needed the database: %w", err)
	}
	return nil
}

// replicas opens a fresh database of the dialect as the processes that
// share it: the writer, and the stores that should see its changes (the
// writer, and on PostgreSQL another API replica's).
func replicas(t *testing.T, dialect string) (writer *store.Store, all []*store.Store) {
	u := url(t, dialect)
	open := func() *store.Store {
		s, err := store.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer = open()
	all = []*store.Store{writer}
	if dialect == store.Postgres {
		all = append(all, open())
	}
	return writer, all
}

// Every write that changes what a poll reads reaches the poll cache of
// every store on the database: at once on the store that wrote it, and
// through the change feed (PostgreSQL's NOTIFY) on another process's.
func TestPollCacheFollowsEveryChange(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		writer, readers := replicas(t, dialect)
		mustTx(t, writer, func(ctx context.Context, tx *store.Tx) error {
			if err := tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "hash-1"); err != nil {
				return err
			}
			return tx.CreateAgent(ctx, agent("a-2", "plant-b", inventory.RouterEdge, false), "hash-2")
		})
		var last pollView
		for _, step := range []struct {
			name string
			// hash is the credential probed; cached, whether the reader
			// holds it with a router version before the write.
			hash   string
			cached bool
			write  func(ctx context.Context, tx *store.Tx) error
			want   func(before pollView) error
		}{
			{"created", "hash-1", true, nil, func(v pollView) error {
				if v.agent != "plant-a" || !v.changes.MicroserviceConfig || v.version == "" {
					return fmt.Errorf("read %+v", v)
				}
				return nil
			}},
			{"router document changed", "hash-1", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(routerconfig.Empty), Changed: true})
			}, func(before pollView) error {
				if last.version == before.version || last.changes.LastUpdated == before.changes.LastUpdated {
					return fmt.Errorf("read %+v, as before", last)
				}
				return nil
			}},
			{"acknowledged", "hash-1", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.AckChanges(ctx, "a-1", last.changes.LastUpdated)
			}, func(pollView) error {
				if last.changes.MicroserviceConfig {
					return fmt.Errorf("read %+v", last)
				}
				return nil
			}},
			{"token rotated", "hash-1", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.SetAgentTokenHash(ctx, "a-1", "hash-1b")
			}, func(pollView) error {
				if last.agent != "" {
					return fmt.Errorf("the old credential still names %s", last.agent)
				}
				return nil
			}},
			{"router removed", "hash-1b", true, func(ctx context.Context, tx *store.Tx) error {
				a, err := tx.AgentByUUID(ctx, "a-1")
				if err != nil {
					return err
				}
				a.RouterMode = inventory.RouterNone
				return tx.UpdateAgent(ctx, &a)
			}, func(pollView) error {
				if last.mode != inventory.RouterNone || last.version != "" {
					return fmt.Errorf("read %+v", last)
				}
				return nil
			}},
			{"deleted", "hash-1b", false, func(ctx context.Context, tx *store.Tx) error {
				return tx.DeleteAgent(ctx, "a-1")
			}, func(pollView) error {
				if last.agent != "" {
					return fmt.Errorf("the deleted agent's credential still names %s", last.agent)
				}
				return nil
			}},
		} {
			t.Run(step.name, func(t *testing.T) {
				// Every reader holds the agent's answers in memory...
				var before pollView
				for i, r := range readers {
					if step.cached {
						eventually(t, 10*time.Second, fmt.Sprintf("store %d answers from memory", i), func() error {
							return fromMemory(r, step.hash, "a-1")
						})
					}
					before, _ = readPoll(context.Background(), r, step.hash, "a-1")
				}
				if step.write != nil {
					mustTx(t, writer, step.write)
				}
				// ...and reads the change at once (the writer) or as soon as
				// its notification comes (another process).
				for i, r := range readers {
					wait := time.Duration(0)
					if r != writer {
						wait = 10 * time.Second
					}
					eventually(t, wait, fmt.Sprintf("store %d reads the change", i), func() error {
						var err error
						if last, err = readPoll(context.Background(), r, step.hash, "a-1"); err != nil {
							return err
						}
						return step.want(before)
					})
				}
			})
		}
		// The other agent's answers never left memory.
		for i, r := range readers {
			if err := fromMemory(r, "hash-2", "a-2"); err != nil {
				t.Errorf("store %d: %v", i, err)
			}
		}
	})
}

// A listener that lost its connection serves nothing from memory until it
// listens again, and then forgets what it held: a change committed while
// it was not listening is never served stale.
func TestPollCacheForgetsAcrossALostListener(t *testing.T) {
	writer, stores := replicas(t, store.Postgres)
	reader := stores[1]
	mustTx(t, writer, func(ctx context.Context, tx *store.Tx) error {
		if err := tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "hash-1"); err != nil {
			return err
		}
		return tx.CreateAgent(ctx, agent("a-2", "plant-b", inventory.RouterEdge, false), "hash-2")
	})
	for _, a := range [][2]string{{"hash-1", "a-1"}, {"hash-2", "a-2"}} {
		eventually(t, 10*time.Second, "the reader answers "+a[1]+" from memory", func() error { return fromMemory(reader, a[0], a[1]) })
	}
	// Cut the reader's listener (the one session that LISTENs), again
	// each time it comes back (it reconnects within 100 ms, often before
	// a loaded machine looks), and revoke a-1's credential while it is
	// away.
	stop := make(chan struct{})
	cut := make(chan error, 1)
	go func() {
		for {
			err := writer.InTx(context.Background(), func(tx *store.Tx) error {
				_, err := tx.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
				return err
			})
			select {
			case <-stop:
				cut <- err
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	eventually(t, 10*time.Second, "the reader reads the database", func() error {
		if err := fromMemory(reader, "hash-2", "a-2"); err == nil {
			return errors.New("still answers from memory")
		}
		return nil
	})
	// Written without the feed: as if its notification were lost.
	mustTx(t, writer, func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE agents SET token_hash = 'hash-1b' WHERE uuid = 'a-1'`)
		return err
	})
	close(stop)
	if err := <-cut; err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the reader answers from memory again", func() error { return fromMemory(reader, "hash-2", "a-2") })
	if _, err := reader.AgentByToken(context.Background(), "hash-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the revoked credential after the listener came back: %v, want not found", err)
	}
}

// Every write to what the API's lists show moves ListedChanges, on the
// store that wrote it at once and on another process's through the change
// feed; a rolled back transaction does not.
func TestListedChangesFollowEveryWrite(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		writer, readers := replicas(t, dialect)
		ms := &inventory.Microservice{UUID: "m-1", Application: "orders", Name: "checkout", AgentUUID: "a-1"}
		errRollback := errors.New("rolled back")
		all := []string{"(every agent)"}
		for _, step := range []struct {
			name  string
			moves bool
			write func(ctx context.Context, tx *store.Tx) error
			// touches: the uuids ListedAgentsSince names (all: every agent).
			touches []string
		}{
			{"agent created", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.CreateAgent(ctx, agent("a-1", "plant-a", inventory.RouterEdge, false), "hash-1")
			}, all},
			{"agent tagged", true, func(ctx context.Context, tx *store.Tx) error {
				a, err := tx.AgentByUUID(ctx, "a-1")
				if err != nil {
					return err
				}
				a.Tags = []string{"east"}
				return tx.UpdateAgent(ctx, &a)
			}, all},
			{"router document changed", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.WriteRouter(ctx, "a-1", store.RouterWrite{Base: []byte(routerconfig.Empty), Changed: true})
			}, []string{"a-1"}},
			{"router reported", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.SaveRouterReport(ctx, "a-1", wire.RouterReport{Version: `"1"`, Error: "router unreachable"})
			}, []string{"a-1"}},
			{"microservice created", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.CreateMicroservice(ctx, ms)
			}, []string{"m-1"}},
			{"microservice renamed", true, func(ctx context.Context, tx *store.Tx) error {
				ms.Name = "pay"
				return tx.UpdateMicroservice(ctx, ms)
			}, []string{"m-1"}},
			{"microservice deleted", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.DeleteMicroservice(ctx, ms.UUID)
			}, []string{"m-1"}},
			{"service created", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.InsertService(ctx, externalService("vendor", 10024))
			}, []string{}},
			{"agent renamed, rolled back", false, func(ctx context.Context, tx *store.Tx) error {
				a, err := tx.AgentByUUID(ctx, "a-1")
				if err != nil {
					return err
				}
				a.Name = "plant-z"
				if err := tx.UpdateAgent(ctx, &a); err != nil {
					return err
				}
				return errRollback
			}, nil},
			{"agent deleted", true, func(ctx context.Context, tx *store.Tx) error {
				return tx.DeleteAgent(ctx, "a-1")
			}, all},
		} {
			t.Run(step.name, func(t *testing.T) {
				// Each store's count settles first: on PostgreSQL the writer
				// hears its own notifications too, a moment after its commit.
				before := make([]uint64, len(readers))
				for i, r := range readers {
					eventually(t, 10*time.Second, fmt.Sprintf("store %d's count settles", i), func() error {
						var current bool
						if before[i], current = r.ListedChanges(); !current {
							return errors.New("not current")
						}
						time.Sleep(300 * time.Millisecond) // past a heartbeat
						if now, current := r.ListedChanges(); !current || now != before[i] {
							return fmt.Errorf("moved from %d to %d", before[i], now)
						}
						return nil
					})
				}
				if err := inTx(t, writer, step.write); err != nil && !errors.Is(err, errRollback) {
					t.Fatal(err)
				}
				for i, r := range readers {
					if !step.moves {
						// Past a heartbeat: a notification would have come.
						time.Sleep(600 * time.Millisecond)
						if now, _ := r.ListedChanges(); now != before[i] {
							t.Errorf("store %d: the count moved from %d to %d", i, before[i], now)
						}
						continue
					}
					wait := time.Duration(0)
					if r != writer {
						wait = 10 * time.Second
					}
					eventually(t, wait, fmt.Sprintf("store %d's count moves", i), func() error {
						if now, _ := r.ListedChanges(); now == before[i] {
							return fmt.Errorf("at %d", now)
						}
						uuids, everyAgent := r.ListedAgentsSince(before[i])
						if everyAgent {
							uuids = all
						}
						if slices.Sort(uuids); !slices.Equal(uuids, step.touches) {
							return fmt.Errorf("agents listed anew %v, want %v", uuids, step.touches)
						}
						return nil
					})
				}
			})
		}
	})
}
