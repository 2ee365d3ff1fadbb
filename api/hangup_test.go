package api

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"svcbridge/auth"
	"svcbridge/metrics"
	"svcbridge/pgtest"
	"svcbridge/store"
)

// A client that hangs up while its request waits (on the identity
// provider, on a PostgreSQL lock) is logged at INFO with status 499 and
// counted under 499: no ERROR line, no 5xx an alert would see.
func TestClientThatHangsUpIsNotAServerError(t *testing.T) {
	var logs lockedBuffer
	defer slog.SetDefault(slog.Default())
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	slog.SetDefault(logger) // fail logs there

	// hangUp sends method path with body, cancels it once waiting says
	// the server waits, and returns when the server has answered.
	hangUp := func(api *testAPI, method, path, body string, waiting func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { waiting(); cancel() }()
		req, _ := http.NewRequestWithContext(ctx, method, api.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if _, err := api.srv.Client().Do(req); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s %s: %v, want the client's cancel", method, path, err)
		}
		api.srv.Close() // waits for the handler
	}
	count := func(method, route, code string) float64 {
		return testutil.ToFloat64(metrics.HTTPRequests.WithLabelValues(method, route, code))
	}
	check := func(method, route string, run func()) {
		t.Helper()
		before := map[string]float64{"499": count(method, route, "499"), "500": count(method, route, "500"), "503": count(method, route, "503")}
		run()
		for code, want := range map[string]float64{"499": before["499"] + 1, "500": before["500"], "503": before["503"]} {
			if got := count(method, route, code); got != want {
				t.Errorf("%s %s: %s counted %v times, want %v", method, route, code, got, want)
			}
		}
		if !strings.Contains(logs.String(), "level=INFO msg=request") || !strings.Contains(logs.String(), "status=499") {
			t.Errorf("%s %s: the hang-up is not logged at INFO with status 499:\n%s", method, route, logs.String())
		}
		if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("%s %s: the hang-up is logged as a server problem:\n%s", method, route, logs.String())
		}
	}

	check("POST", "/api/v3/user/refresh", func() {
		inFlight := make(chan struct{})
		issuer := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // after which net/http notices a caller that goes
			close(inFlight)
			<-r.Context().Done() // answers when its caller goes
		}))
		defer issuer.Close()
		api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
			o.Logger = logger
			o.Sessions.Issuer = &auth.TokenEndpoint{URL: issuer.URL, ClientID: "svcbridge"}
		})
		hangUp(api, "POST", "/api/v3/user/refresh", `{"refreshToken":"an-oidc-refresh-token"}`, func() { <-inFlight })
	})

	check("GET", "/api/v3/agents", func() {
		url := pgtest.NewDB(t)
		st, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) { o.Store, o.Logger = st, logger })
		locker, err := sql.Open("postgres", url)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		lock, err := locker.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Rollback()
		if _, err := lock.Exec(`LOCK TABLE agents IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		hangUp(api, "GET", "/api/v3/agents", "", func() {
			// Until the list's query waits on the lock.
			for waiting := 0; waiting == 0; {
				locker.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
			}
		})
	})
}
