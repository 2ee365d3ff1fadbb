package api

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"svcbridge/pgtest"
	"svcbridge/store"
)

// replica is one API process of a fleet's control plane. Its store's
// sessions carry its name as their application_name, and admin is a
// session of the test's own on the database, which sees them.
type replica struct {
	api   *testAPI
	store *store.Store
	name  string
	admin *sql.DB
}

// newReplicas serves n API replicas, each with its own store and opts, on
// one fresh PostgreSQL database, and opens one more store there: a
// worker's.
func newReplicas(t *testing.T, n int, opts ...func(*Options)) ([]replica, *store.Store) {
	dbURL := pgtest.NewDB(t)
	open := func(name string) *store.Store {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		st, err := store.Open(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	admin, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	out := make([]replica, n)
	for i := range out {
		name := fmt.Sprintf("replica-%d", i)
		st := open(name)
		o := testOptions(st, &recordingReconciler{})
		for _, opt := range opts {
			opt(&o)
		}
		out[i] = replica{api: serveTestAPI(t, o), store: st, name: name, admin: admin}
	}
	return out, open("worker")
}

// pollAnswer is what an agent's poll of both routes read.
type pollAnswer struct {
	changes store.Changes
	status  int // of the router document named by the ETag the agent has
	etag    string
}

// poll is an agent's poll: its change flags, then its router document
// with If-None-Match: etag. Any status but 200 or 304 is an error.
func (r replica) poll(token, etag string) (pollAnswer, error) {
	var p pollAnswer
	ch := r.api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(token)...)
	if ch.Status != http.StatusOK {
		return p, fmt.Errorf("changes: %d %s", ch.Status, ch.Body)
	}
	ch.Decode(&p.changes)
	doc := r.api.Do(http.MethodGet, "/api/v3/agent/router", nil, append(bearer(token), "If-None-Match", etag)...)
	if doc.Status != http.StatusOK && doc.Status != http.StatusNotModified {
		return p, fmt.Errorf("router: %d %s", doc.Status, doc.Body)
	}
	p.status, p.etag = doc.Status, doc.Header.Get("ETag")
	return p, nil
}

// unchanged checks that an agent's poll of r reads no change and sends
// r's database nothing: no session of r's store ran a statement during the
// poll (pg_stat_activity's state_change), but for the change feed's
// heartbeats, which run on their own clock.
func (r replica) unchanged(token, etag string) error {
	var since time.Time
	if err := r.admin.QueryRow(`SELECT clock_timestamp()`).Scan(&since); err != nil {
		return err
	}
	p, err := r.poll(token, etag)
	if err != nil {
		return err
	}
	if p.changes.MicroserviceConfig || p.status != http.StatusNotModified {
		return fmt.Errorf("a change to report: %+v", p)
	}
	var queries []string
	rows, err := r.admin.Query(`SELECT query FROM pg_stat_activity WHERE datname = current_database()
		AND application_name = $1 AND state_change >= $2 AND query <> 'SELECT pg_notify($1, $2)'`, r.name, since)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			return err
		}
		queries = append(queries, q)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(queries) > 0 {
		return fmt.Errorf("the poll ran statements on %d sessions (their last: %q)", len(queries), queries)
	}
	return nil
}

// within retries check until it passes, failing after limit.
func within(t *testing.T, limit time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %s", what, err, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUnchangedPollsAcrossReplicas: two API replicas on one PostgreSQL
// answer an agent's unchanged polls from memory, without a database
// transaction; a change the worker writes reaches both within a second,
// as do a revoked token and a deleted agent.
func TestUnchangedPollsAcrossReplicas(t *testing.T) {
	replicas, worker := newReplicas(t, 2)
	a, b := replicas[0], replicas[1]
	fog := createAgent(t, a.api, map[string]any{"name": "fog-a", "routerMode": "edge"})
	other := createAgent(t, b.api, map[string]any{"name": "fog-b", "routerMode": "edge"})

	// The agents apply their first change, on either replica.
	settle := func(r replica, ag createdAgent) string {
		p, err := r.poll(ag.Token, "")
		if err != nil {
			t.Fatal(err)
		}
		r.api.JSON(http.MethodPatch, "/api/v3/agent/config/changes", map[string]any{"lastUpdated": p.changes.LastUpdated},
			bearer(ag.Token)...).Want(http.StatusNoContent)
		return p.etag
	}
	etag, otherTag := settle(a, fog), settle(b, other)
	for i, r := range replicas {
		within(t, 10*time.Second, fmt.Sprintf("replica %d answers unchanged polls from memory", i), func() error {
			if err := r.unchanged(fog.Token, etag); err != nil {
				return err
			}
			return r.unchanged(other.Token, otherTag)
		})
	}

	t.Run("a change the worker writes", func(t *testing.T) {
		if err := worker.InTx(context.Background(), func(tx *store.Tx) error {
			return tx.WriteRouter(context.Background(), fog.UUID, store.RouterWrite{Base: []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"x":1}`)})
		}); err != nil {
			t.Fatal(err)
		}
		for i, r := range replicas {
			within(t, time.Second, fmt.Sprintf("replica %d reports the change", i), func() error {
				p, err := r.poll(fog.Token, etag)
				if err != nil {
					return err
				}
				if !p.changes.MicroserviceConfig || p.status != http.StatusOK || p.etag == etag {
					return fmt.Errorf("read %+v", p)
				}
				return nil
			})
		}
		etag = settle(b, fog)
		for i, r := range replicas {
			within(t, time.Second, fmt.Sprintf("replica %d reads the acknowledgement", i), func() error {
				return r.unchanged(fog.Token, etag)
			})
		}
	})

	refused := func(token string) func() error {
		return func() error {
			for i, r := range replicas {
				if got := r.api.Do(http.MethodGet, "/api/v3/agent/config/changes", nil, bearer(token)...).Status; got != http.StatusUnauthorized {
					return fmt.Errorf("replica %d answers %d", i, got)
				}
			}
			return nil
		}
	}
	t.Run("a revoked token", func(t *testing.T) {
		var rotated struct {
			Token string `json:"token"`
		}
		a.api.JSON(http.MethodPost, "/api/v3/agents/fog-a/token", nil).Want(http.StatusOK).Decode(&rotated)
		within(t, time.Second, "the old token refused on every replica", refused(fog.Token))
		for i, r := range replicas {
			within(t, 10*time.Second, fmt.Sprintf("replica %d answers the new token from memory", i), func() error {
				return r.unchanged(rotated.Token, etag)
			})
		}
	})

	t.Run("a deleted agent", func(t *testing.T) {
		b.api.Do(http.MethodDelete, "/api/v3/agents/fog-b", nil).Want(http.StatusNoContent)
		within(t, time.Second, "its token refused on every replica", refused(other.Token))
	})

}
