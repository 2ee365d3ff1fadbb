package systemtest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"svcbridge/pgtest"
	"svcbridge/porttest"
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
	dbURL := pgtest.NewDB(t)
	s := newSystemOn(t, dbURL, temporaltest.NewServer(temporaltest.WithT(t)))
	databaseDown(t, s, dbURL)
}

// TestDevDatabaseDownAnswers503 is TestDatabaseDownAnswers503 for dev on
// PostgreSQL, whose worker and its retries run beside the API, while
// services are being reconciled.
func TestDevDatabaseDownAnswers503(t *testing.T) {
	dbURL := pgtest.NewDB(t)
	apiPort := porttest.Free(t)
	dev := start(t, []string{"DATABASE_URL=" + dbURL, "AUTH_TOKENS_FILE=" + tokensFile(t)}, "dev", "--data-dir", t.TempDir(),
		"--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--temporal-port", fmt.Sprint(porttest.Free(t)), "--ui-port", fmt.Sprint(porttest.Free(t)))
	s := &system{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}
	waitHTTP(t, s.url+"/readyz", dev)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	for i := range 20 {
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{"name": fmt.Sprintf("svc-%d", i), "type": "external",
			"resource": "203.0.113.10", "targetPort": 2000 + i}, nil)
	}
	databaseDown(t, s, dbURL)
}

// databaseDown closes s's database to every session, then sends requests
// at once (lists, creates, updates): each must answer 503 with Retry-After
// and the UnavailableError envelope within seconds (the client gives up
// after unavailableWithin, far beyond the store's 1.3 s of retries); once
// the database is back, a list succeeds.
func databaseDown(t *testing.T, s *system, dbURL string) {
	fault := newPostgresFault(t, dbURL)
	fault.allowConnections(false)
	t.Cleanup(func() { fault.allowConnections(true) })
	fault.terminate()

	const unavailableWithin = 15 * time.Second
	client := &http.Client{Transport: adminClient.Transport, Timeout: unavailableWithin}
	var wg sync.WaitGroup
	for i := range 21 {
		method, path, body := "GET", "/api/v3/services", ""
		switch i % 3 {
		case 1:
			method, body = "POST", fmt.Sprintf(`{"name":"down-%d","type":"external","resource":"203.0.113.10","targetPort":443}`, i)
		case 2:
			method, path, body = "PATCH", fmt.Sprintf("/api/v3/services/svc-%d", i), `{"targetPort":3000}`
		}
		wg.Go(func() {
			req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("%s %s with the database down: %v", method, path, err)
				return
			}
			defer resp.Body.Close()
			var e struct{ Name, Message string }
			json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || e.Name != "UnavailableError" {
				t.Errorf("%s %s with the database down: %d Retry-After %q %+v, want 503 with Retry-After and UnavailableError",
					method, path, resp.StatusCode, resp.Header.Get("Retry-After"), e)
			}
		})
	}
	wg.Wait()

	fault.allowConnections(true)
	if code, body := s.do("GET", "/api/v3/services", nil); code != http.StatusOK {
		t.Errorf("list once the database is back: %d %s", code, body)
	}
}

// TestConnectionsKilledDuringCreates ends every session of the database
// every 50 ms while clients create services in parallel, as a failover
// or an administrator's pg_terminate_backend would: no request answers
// 500 (a transaction that lost its connection runs again, or the client
// is told 503 and retries), and every service becomes ready.
//
// The kills last killFor at most: a pass that failed meanwhile waits out
// Temporal's retry backoff, doubling from 2 s, so on a slow machine whose
// creates took minutes the next retry could be minutes away.
func TestConnectionsKilledDuringCreates(t *testing.T) {
	dbURL := pgtest.NewDB(t)
	s := newSystemOn(t, dbURL, temporaltest.NewServer(temporaltest.WithT(t)))
	s.startWorker()
	fault := newPostgresFault(t, dbURL)
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	s.agent(map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}})

	const clients, each, killFor = 10, 8, 20 * time.Second
	stop := make(chan struct{})
	killed := make(chan int)
	go func() {
		n := 0
		end := time.After(killFor)
		for {
			select {
			case <-stop:
				killed <- n
				return
			case <-end:
				killed <- n // read once the creates are done
				return
			case <-time.After(50 * time.Millisecond):
				n += fault.terminate()
			}
		}
	}()

	var mu sync.Mutex
	codes := map[int]int{}
	var wrong []string
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("svc-%d-%d", c, i)
				body := fmt.Sprintf(`{"name":%q,"type":"agent","resource":"fog-a","targetPort":%d}`, name, 2000+c*each+i)
				for attempt := 0; ; attempt++ {
					code, out := post(s.url+"/api/v3/services", body)
					mu.Lock()
					codes[code]++
					mu.Unlock()
					// A 503 may come after the commit: the retry then finds the name taken.
					if code == http.StatusServiceUnavailable && attempt < 20 {
						time.Sleep(200 * time.Millisecond)
						continue
					}
					if code != http.StatusCreated && !(code == http.StatusConflict && attempt > 0) {
						mu.Lock()
						wrong = append(wrong, fmt.Sprintf("create %s: %d %s", name, code, out))
						mu.Unlock()
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("ended %d database sessions during the creates; answers by status: %v", <-killed, codes)
	for _, w := range wrong {
		t.Error(w)
	}
	if codes[http.StatusInternalServerError] > 0 {
		t.Errorf("%d creates answered 500", codes[http.StatusInternalServerError])
	}
	s.waitAllReady("every service ready", clients*each, killFor+time.Minute)
}

// post sends a JSON body as the admin and returns the status and answer;
// a transport error is status 0.
func post(url, body string) (int, string) {
	resp, err := adminClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
