package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"svcbridge/wire"
	"testing"
)

func TestParseSelector(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil: an error
	}{
		{"checkout", []string{"checkout"}},
		{"tag=checkout", []string{"checkout"}},
		{" tag = checkout , payments", []string{"checkout", "payments"}},
		{"app=checkout", nil},
		{"checkout,", nil},
		{"tag=", nil},
	} {
		got, err := parseSelector(c.in)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("parseSelector(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestSelectServices(t *testing.T) {
	svcs := []Service{{Service: wire.Service{Name: "a", Tags: []string{"x", "y"}}}, {Service: wire.Service{Name: "b", Tags: []string{"x"}}}, {Service: wire.Service{Name: "c"}}}
	for _, c := range []struct {
		tags []string
		want []string
	}{
		{[]string{"x"}, []string{"a", "b"}},
		{[]string{"x", "y"}, []string{"a"}},
		{[]string{"z"}, nil},
	} {
		var got []string
		for _, s := range selectServices(svcs, c.tags) {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("select %q = %q, want %q", c.tags, got, c.want)
		}
	}
}

func TestParseSortBy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil: an error
	}{
		{".name", []string{"name"}},
		{"{.metadata.name}", []string{"name"}},
		{".spec.targetPort", []string{"targetPort"}},
		{".status", []string{"status"}},
		{".kubernetes.loadBalancerIP", []string{"kubernetes", "loadBalancerIP"}},
		{"name", nil},
		{".", nil},
		{".a..b", nil},
	} {
		got, err := parseSortBy(c.in)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("parseSortBy(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestSortByField(t *testing.T) {
	items := []string{
		`{"name":"a","port":10,"at":"2026-01-05T10:00:00.5Z","status":"ready"}`,
		`{"name":"b","port":9,"at":"2026-01-05T10:00:00Z","status":"failed"}`,
		`{"name":"c","port":null,"at":"2026-01-05T09:00:00Z","status":"ready"}`,
		`{"name":"d","port":100,"at":"2026-01-05T11:00:00+02:00","status":"pending"}`,
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	names := func(items []string) string {
		var out []string
		for _, it := range items {
			var v struct{ Name string }
			json.Unmarshal([]byte(it), &v)
			out = append(out, v.Name)
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		path []string
		want string
	}{
		{nil, "[a b c d]"},
		{[]string{"port"}, "[c b a d]"},   // by value, not as text; null first
		{[]string{"at"}, "[c d b a]"},     // by instant, whatever the zone and fraction
		{[]string{"status"}, "[b d a c]"}, // as text, stably
	} {
		got, err := sortByField(items, raw, c.path)
		if err != nil || names(got) != c.want {
			t.Errorf("sort by %q = %s, %v; want %s", c.path, names(got), err, c.want)
		}
	}
	if names(items) != "[a b c d]" {
		t.Errorf("sortByField changed its input: %s", names(items))
	}
	if _, err := sortByField(items, raw, []string{"nope"}); err == nil {
		t.Error("a field no item has sorted without an error")
	}
}
