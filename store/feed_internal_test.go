package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestPayloadsRoundTrip(t *testing.T) {
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
	}
	for _, tc := range []struct {
		name string
		w    touched
		want int // payloads
	}{
		{"nothing", touched{}, 0},
		{"one agent", touched{agents: []string{"a"}}, 1},
		{"both kinds, duplicates once", touched{agents: []string{"b", "a", "b"}, versions: []string{"c", "c"}}, 2},
		{"more than one notification holds", touched{versions: many}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.w.payloads()
			if len(ps) != tc.want {
				t.Fatalf("%d payloads, want %d: %q", len(ps), tc.want, ps)
			}
			got := map[byte][]string{}
			for _, p := range ps {
				if len(p) > maxPayload {
					t.Errorf("payload of %d bytes, over %d", len(p), maxPayload)
				}
				n, ok := parsePayload(p)
				if !ok {
					t.Fatalf("payload %q does not parse", p)
				}
				got[n.kind] = append(got[n.kind], n.uuids...)
			}
			for kind, sent := range map[byte][]string{changeAgent: tc.w.agents, changeVersions: tc.w.versions} {
				want := slices.Compact(slices.Sorted(slices.Values(sent)))
				if !slices.Equal(got[kind], want) {
					t.Errorf("kind %c: read back %v, want %v", kind, got[kind], want)
				}
			}
		})
	}
}

func TestParsePayload(t *testing.T) {
	sent := time.Unix(0, 1700000000123456789)
	n, ok := parsePayload("h:abc:" + fmt.Sprint(sent.UnixNano()))
	if !ok || n.kind != heartbeat || n.sender != "abc" || !n.sent.Equal(sent) {
		t.Errorf("heartbeat read as %+v, %v", n, ok)
	}
	// Unknown payloads (a newer replica's) are not guessed at: the
	// listener empties the cache for them.
	for _, p := range []string{"", "a", "x:1", "h:abc", "h:abc:soon", "v"} {
		if n, ok := parsePayload(p); ok {
			t.Errorf("%q read as %+v", p, n)
		}
	}
}
