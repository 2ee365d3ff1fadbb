package store

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestListMovesSince: the agents moves touched since a count, each once;
// every agent when a move touched all or the moves kept no longer reach
// back to the count.
func TestListMovesSince(t *testing.T) {
	var count atomic.Uint64
	var m listMoves
	m.move(&count, false, []string{"a", "b"}, []string{"m-1"})
	m.move(&count, false, nil)
	m.move(&count, false, []string{"b", "c"})
	for _, c := range []struct {
		since uint64
		want  []string
		all   bool
	}{
		{3, nil, false},
		{2, []string{"b", "c"}, false},
		{1, []string{"b", "c"}, false},
		{0, []string{"a", "b", "m-1", "c"}, false},
	} {
		got, all := m.since(c.since)
		if !slices.Equal(got, c.want) || all != c.all {
			t.Errorf("since %d: %v all %v, want %v all %v", c.since, got, all, c.want, c.all)
		}
	}
	m.move(&count, true)
	m.move(&count, false, []string{"d"})
	if _, all := m.since(2); !all {
		t.Error("since before a move of every agent: not all")
	}
	if got, all := m.since(4); all || !slices.Equal(got, []string{"d"}) {
		t.Errorf("since the move of every agent: %v all %v", got, all)
	}
	for i := range listMovesKept {
		m.move(&count, false, []string{strconv.Itoa(i)})
	}
	if _, all := m.since(5); !all {
		t.Errorf("since a count no longer kept: not all")
	}
	now := count.Load()
	if got, all := m.since(now - 1); all || !slices.Equal(got, []string{strconv.Itoa(listMovesKept - 1)}) {
		t.Errorf("since the move before last: %v all %v", got, all)
	}
}
