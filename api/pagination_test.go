package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"svcbridge/inventory"
	"svcbridge/store"
)

func TestPaginateResumesAfterTheLastKey(t *testing.T) {
	items := [][]string{{"a", "x"}, {"a", "y"}, {"a-b", "x"}, {"b", "a"}}
	key := func(k []string) []string { return k }
	join := func(page [][]string) string {
		var s []string
		for _, k := range page {
			s = append(s, strings.Join(k, "/"))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		limit    int
		after    []string
		want     string
		wantNext bool
	}{
		{0, nil, "a/x a/y a-b/x b/a", false},
		{2, nil, "a/x a/y", true},
		{4, nil, "a/x a/y a-b/x b/a", false},
		{9, nil, "a/x a/y a-b/x b/a", false},
		{2, []string{"a", "y"}, "a-b/x b/a", false},
		{1, []string{"a", "y"}, "a-b/x", true},
		// The last key served was deleted since: the next ones follow.
		{2, []string{"a", "z"}, "a-b/x b/a", false},
		{2, []string{"c"}, "", false},
	} {
		page, next := paginate(items, key, pageQuery{limit: c.limit, after: c.after})
		if join(page) != c.want || (next != "") != c.wantNext {
			t.Errorf("limit %d after %v: %q next %q, want %q next %v", c.limit, c.after, join(page), next, c.want, c.wantNext)
		}
		if next != "" {
			q, err := parsePage("", next)
			if err != nil || !slices.Equal(q.after, page[len(page)-1]) {
				t.Errorf("token %q reads back as %v %v", next, q.after, err)
			}
		}
	}
	for _, bad := range [][2]string{{"0", ""}, {"-1", ""}, {"x", ""}, {"1.5", ""}, {"", "not base64!"}, {"", "bnVsbA"}, {"", "W10"}} {
		if _, err := parsePage(bad[0], bad[1]); err == nil {
			t.Errorf("limit %q continue %q accepted", bad[0], bad[1])
		}
	}
}

// Pages through each list route: every item exactly once, in order, the
// last page without a token.
func TestListRoutesPage(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite)
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "agent-0", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
	for i := range 5 {
		if i > 0 {
			api.JSON("POST", "/api/v3/agents", map[string]any{"name": fmt.Sprintf("agent-%d", i), "routerMode": "none"}).Want(201)
		}
		api.JSON("POST", "/api/v3/microservices", map[string]any{"application": fmt.Sprintf("app-%d", i%2), "name": fmt.Sprintf("m-%d", i), "agent": "agent-0"}).Want(201)
		api.JSON("POST", "/api/v3/services", map[string]any{"name": fmt.Sprintf("svc-%d", i), "type": "external", "resource": "203.0.113.1", "targetPort": 80 + i}).Want(201)
	}
	for _, c := range []struct{ path, field string }{
		{"/api/v3/agents", "name"}, {"/api/v3/services", "name"}, // microservices: TestIofogReads
	} {
		list := func(r *testResponse) []map[string]any {
			var l []map[string]any
			r.Decode(&l)
			return l
		}
		var all []string
		for _, it := range list(api.Do("GET", c.path, nil).Want(200)) {
			all = append(all, fmt.Sprint(it[c.field]))
		}
		if len(all) != 5 {
			t.Fatalf("%s lists %v", c.path, all)
		}
		var paged []string
		pages, token := 0, ""
		for {
			q := url.Values{"limit": {"2"}}
			if token != "" {
				q.Set("continue", token)
			}
			r := api.Do("GET", c.path+"?"+q.Encode(), nil).Want(200)
			for _, it := range list(r) {
				paged = append(paged, fmt.Sprint(it[c.field]))
			}
			pages++
			if token = r.Header.Get(ContinueHeader); token == "" {
				break
			}
		}
		if !slices.Equal(paged, all) || pages != 3 {
			t.Errorf("%s in pages of 2: %v in %d pages, want %v in 3", c.path, paged, pages, all)
		}
		if r := api.Do("GET", c.path+"?limit=5", nil).Want(200); r.Header.Get(ContinueHeader) != "" {
			t.Errorf("%s?limit=5 of 5 items gave a continue token", c.path)
		}
	}
}

// A ?limit= beyond MaxLimit is served as MaxLimit and the next page's
// token; a ?continue= is exactly a token this API gives, its key text.
func TestParsePageBoundsWhatAClientNames(t *testing.T) {
	for _, c := range []struct {
		limit string
		want  int
	}{
		{"1", 1}, {"500", MaxLimit}, {"501", MaxLimit}, {"100000000", MaxLimit}, {"99999999999999999999999999", MaxLimit},
	} {
		if q, err := parsePage(c.limit, ""); err != nil || q.limit != c.want {
			t.Errorf("limit %q: %d %v, want %d", c.limit, q.limit, err, c.want)
		}
	}
	for _, bad := range []string{"-99999999999999999999999999", "1e9", " 1"} {
		if _, err := parsePage(bad, ""); err == nil {
			t.Errorf("limit %q accepted", bad)
		}
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for token, want := range map[string][]string{
		continueToken([]string{"a"}):                              {"a"},
		continueToken([]string{"2026-01-01T00:00:00Z", "x", "1"}): {"2026-01-01T00:00:00Z", "x", "1"},
		continueToken([]string{"<&>", "é"}):                       {"<&>", "é"},
		continueToken([]string{"a\x00"}):                          nil, // a key no item has
		continueToken([]string{"a\u202e"}):                        nil,
		enc(`["\ud800"]`):                                         nil, // decodes to U+FFFD
		enc("[\"\xff\"]"):                                         nil,
		enc(`[ "a"]`):                                             nil, // not as this API writes it
		enc(`["\u0061"]`):                                         nil,
		enc(`[]`):                                                 nil,
		enc(`null`):                                               nil,
		enc(`{"a":1}`):                                            nil,
		continueToken([]string{strings.Repeat("a", 390)}):         nil, // longer than maxContinue
		continueToken([]string{strings.Repeat("a", 370)}):         {strings.Repeat("a", 370)},
		"!!": nil,
	} {
		if got := continueKey(token); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("continueKey(%q) = %q, want %q", token, got, want)
		}
	}
}

// TestListLimitIsBounded (issue 37): ?limit=100000000 made the services
// list allocate its size before reading a row, and the process died. Every
// list route answers it, on both stores, with at most MaxLimit items and
// the token of the rest.
func TestListLimitIsBounded(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect)
		createAgent(t, api, map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
		createMicroservice(t, api, map[string]any{"application": "shop", "name": "cart", "agent": "hub"})
		createService(t, api, map[string]any{"name": "vendor", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
		for _, path := range []string{"/api/v3/services", "/api/v3/agents", "/api/v3/microservices", "/api/v3/events", "/api/v3/services/vendor/events"} {
			for _, limit := range []string{"100000000", "99999999999999999999999999"} {
				var items []map[string]any
				r := api.Do(http.MethodGet, path+"?limit="+limit, nil).Want(http.StatusOK)
				if path == "/api/v3/microservices" { // the reference's shape
					var list struct{ Microservices []map[string]any }
					r.Decode(&list)
					items = list.Microservices
				} else {
					r.Decode(&items)
				}
				if len(items) != 1 || r.Header.Get(ContinueHeader) != "" {
					t.Errorf("%s?limit=%s: %d items, continue %q; want the one item", path, limit, len(items), r.Header.Get(ContinueHeader))
				}
			}
		}
		// MaxLimit+1 agents, written in one transaction (the API would
		// take a while): a page of MaxLimit, then the last.
		err := st.InTx(context.Background(), func(tx *store.Tx) error {
			for i := range MaxLimit {
				a := inventory.NewAgent(uuid.NewString())
				a.Name, a.RouterMode = fmt.Sprintf("edge-%04d", i), inventory.RouterNone
				if err := tx.CreateAgent(context.Background(), &a, uuid.NewString()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var first, rest []map[string]any
		r := api.Do(http.MethodGet, "/api/v3/agents?limit=100000000", nil).Want(http.StatusOK).Decode(&first)
		token := r.Header.Get(ContinueHeader)
		if len(first) != MaxLimit || token == "" {
			t.Fatalf("a page of %d agents, continue %q; want %d and a token", len(first), token, MaxLimit)
		}
		api.Do(http.MethodGet, "/api/v3/agents?limit=100000000&continue="+url.QueryEscape(token), nil).Want(http.StatusOK).Decode(&rest)
		if len(rest) != 1 || rest[0]["name"] != "hub" {
			t.Fatalf("the page after %d agents: %v, want hub alone", MaxLimit, rest)
		}
	})
}

// A list of several runs is answered as one JSON array in order, and a
// panic while showing an item reaches the handler's goroutine (where gin
// recovers it) instead of ending the process.
func TestWriteJSONArrayInRuns(t *testing.T) {
	type item struct {
		I    int    `json:"i"`
		Text string `json:"text"`
	}
	for _, n := range []int{0, 1, encodeRun, encodeRun + 1, 3*encodeRun + 7} {
		want := make([]item, n)
		for i := range want {
			want[i] = item{i, fmt.Sprintf("<%d>", i)}
		}
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		writeJSONArray(c, "items", n, func(i int, v *item) any { // as lists show: into the run's value
			*v = want[i]
			return v
		})
		wantBody, _ := json.Marshal(map[string][]item{"items": want})
		if rec.Body.String() != string(wantBody) {
			t.Fatalf("%d items: answered %.200s…, want %.200s…", n, rec.Body.String(), wantBody)
		}
	}
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	defer func() {
		if p := recover(); p != "item 2500" {
			t.Fatalf("recovered %v, want item 2500's panic", p)
		}
	}()
	writeJSONArray(c, "", 4*encodeRun, func(i int, _ *int) any {
		if i == 2500 {
			panic("item 2500")
		}
		return i
	})
}
