package systemtest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.temporal.io/server/temporaltest"

	"svcbridge/store/storetest"
)

// postgresFault is a test's own PostgreSQL database and an admin
// connection that can hurt it.
type postgresFault struct {
	t     *testing.T
	name  string
	admin *sql.DB
}

func newPostgresFault(t *testing.T, dbURL string) postgresFault {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("postgres", strings.Replace(dbURL, u.Path+"?", "/postgres?", 1))
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { admin.Close() })
	return postgresFault{t: t, name: strings.TrimPrefix(u.Path, "/"), admin: admin}
}

// terminate ends every session of the database, as an administrator (or a
// failover) does; it returns how many there were.
func (f postgresFault) terminate() int {
	var n int
	if err := f.admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`, f.name).Scan(&n); err != nil {
		f.t.Errorf("terminate sessions: %v", err)
	}
	return n
}

// allowConnections opens or closes the database to new sessions.
func (f postgresFault) allowConnections(allow bool) {
	if _, err := f.admin.Exec(fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %t`, f.name, allow)); err != nil {
		f.t.Fatal(err)
	}
}

// TestDatabaseDownAnswers503: while the database refuses every session,
// the API answers 503 with Retry-After in the error envelope, never 500;
// once it is back, the same request succeeds.
func TestDatabaseDownAnswers503(t *testing.T) {
	dbURL := storetest.NewPostgresDB(t)
	s := newSystemOn(t, dbURL, temporaltest.NewServer(temporaltest.WithT(t)))
	fault := newPostgresFault(t, dbURL)
	fault.allowConnections(false)
	t.Cleanup(func() { fault.allowConnections(true) })
	fault.terminate()

	for _, r := range []struct{ method, path string }{{"GET", "/api/v3/services"}, {"GET", "/api/v3/agents"}} {
		req, _ := http.NewRequest(r.method, s.url+r.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Name, Message string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || e.Name != "UnavailableError" {
			t.Errorf("%s %s with the database down: %d Retry-After %q %+v, want 503 with Retry-After and UnavailableError",
				r.method, r.path, resp.StatusCode, resp.Header.Get("Retry-After"), e)
		}
	}
	code, body := s.do("POST", "/api/v3/services", map[string]any{"name": "down", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
	if code != http.StatusServiceUnavailable {
		t.Errorf("create with the database down: %d %s, want 503", code, body)
	}

	fault.allowConnections(true)
	if code, body := s.do("GET", "/api/v3/services", nil); code != http.StatusOK {
		t.Errorf("list once the database is back: %d %s", code, body)
	}
}
