package store

import (
	"slices"
	"strconv"
	"testing"
)

// TestListMovesSince: the agents moves touched since a count, each once;
// every agent when a move touched all or the moves kept no longer reach
// back to the count.
func TestListMovesSince(t *testing.T) {
	var m listMoves
	m.move(false, []string{"a", "b"}, []string{"m-1"})
	m.move(false, nil)
	m.move(false, []string{"b", "c"})
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
	m.move(true)
	m.move(false, []string{"d"})
	if _, all := m.since(2); !all {
		t.Error("since before a move of every agent: not all")
	}
	if got, all := m.since(4); all || !slices.Equal(got, []string{"d"}) {
		t.Errorf("since the move of every agent: %v all %v", got, all)
	}
	for i := range listMovesKept {
		m.move(false, []string{strconv.Itoa(i)})
	}
	if _, all := m.since(5); !all {
		t.Errorf("since a count no longer kept: not all")
	}
	now := m.count.Load()
	if got, all := m.since(now - 1); all || !slices.Equal(got, []string{strconv.Itoa(listMovesKept - 1)}) {
		t.Errorf("since the move before last: %v all %v", got, all)
	}

	// A fan-out: moves of a thousand agents each, the uuids kept bounded.
	thousand := make([]string, 1000)
	for i := range thousand {
		thousand[i] = "agent-" + strconv.Itoa(i)
	}
	for range 200 {
		m.move(false, thousand)
	}
	if m.agents > listMovesAgentsKept || m.agents != 1000*len(m.moves) {
		t.Errorf("after a fan-out: %d uuids kept in %d moves, at most %d", m.agents, len(m.moves), listMovesAgentsKept)
	}
	if got, all := m.since(m.count.Load() - 1); all || len(got) != 1000 {
		t.Errorf("since the fan-out's last move: %d uuids, all %v", len(got), all)
	}
	if _, all := m.since(now); !all {
		t.Errorf("since before the fan-out's moves no longer kept: not all")
	}
	// One move of more agents than a watch would read one by one.
	m.move(false, make([]string, listMoveAgents+1))
	if _, all := m.since(m.count.Load() - 1); !all {
		t.Errorf("since a move of %d agents: not all", listMoveAgents+1)
	}
}
