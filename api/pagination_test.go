package api

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

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
