package store

import (
	"slices"
	"testing"
	"time"

	"svcbridge/service"
)

// The cache answers a service only at the version it was read at, keeps
// only what the last whole list named, and forgets everything once its
// life is over.
func TestServiceCacheTakesOnlyTheVersionItRead(t *testing.T) {
	svc := func(name string) service.Service { return service.Service{Spec: service.Spec{Name: name}} }
	c := newServiceCache()
	c.put([]versioned{{"a", 1}, {"b", 1}, {"c", 1}}, []service.Service{svc("a"), svc("b"), svc("c")}, []int{0, 1, 2}, false)
	for _, tc := range []struct {
		name    string
		prepare func()
		page    []versioned
		missing []int
	}{
		{"as read", func() {}, []versioned{{"a", 1}, {"b", 1}, {"c", 1}}, nil},
		{"written since", func() {}, []versioned{{"a", 1}, {"b", 2}, {"c", 1}}, []int{1}},
		{"never read", func() {}, []versioned{{"a", 1}, {"z", 1}}, []int{1}},
		{"a page keeps the rest", func() { c.put([]versioned{{"a", 1}}, []service.Service{svc("a")}, []int{0}, false) },
			[]versioned{{"b", 1}, {"c", 1}}, nil},
		{"a whole list drops the rest", func() { c.put([]versioned{{"a", 1}, {"b", 1}}, []service.Service{svc("a"), svc("b")}, nil, true) },
			[]versioned{{"a", 1}, {"b", 1}, {"c", 1}}, []int{2}},
		{"too old", func() { c.since = time.Now().Add(-serviceCacheLife - time.Second) },
			[]versioned{{"a", 1}, {"b", 1}}, []int{0, 1}},
	} {
		tc.prepare()
		out := make([]service.Service, len(tc.page))
		missing := c.take(tc.page, out)
		if !slices.Equal(missing, tc.missing) {
			t.Fatalf("%s: missing %v, want %v", tc.name, missing, tc.missing)
		}
		for i, p := range tc.page {
			if !slices.Contains(missing, i) && out[i].Name != p.name {
				t.Fatalf("%s: took %q for %q", tc.name, out[i].Name, p.name)
			}
		}
	}
}
