package cli

import (
	"encoding/json"
	"testing"
)

// TestListPage: a list page is read in both shapes servers answer, a bare
// array or the reference's object holding one ({"microservices": [...]}),
// and anything else is refused.
func TestListPage(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int // items; -1: refused
	}{
		{`[{"name":"a"},{"name":"b"}]`, 2},
		{`[]`, 0},
		{`{"microservices":[{"name":"a"}]}`, 1},
		{`{"microservices":[]}`, 0},
		{`{"microservices":{"name":"a"}}`, -1},
		{`{"a":[],"b":[]}`, -1},
		{`{"name":"a"}`, -1},
		{`null`, 0},
		{`"x"`, -1},
	} {
		page, err := listPage([]byte(tc.body))
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("%s: read as %d items, want refused", tc.body, len(page))
		case tc.want >= 0 && (err != nil || len(page) != tc.want):
			t.Errorf("%s: %d items, %v; want %d", tc.body, len(page), err, tc.want)
		}
		for _, it := range page {
			if !json.Valid(it) {
				t.Errorf("%s: item %s", tc.body, it)
			}
		}
	}
}
