package store

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// A watch of the agents reads again each time the lists' count moves, and
// while a fan-out reaches the fleet it moves every few milliseconds, each
// time for a few agents' flags or reports (or for services, which agents
// do not show): reading and encoding every agent each time cost a core at
// 100,000 agents. So the feed keeps which agents each recent move touched,
// and a watch reads only those.

// listMovesKept and listMovesAgentsKept bound the moves kept and the
// uuids they hold (a fan-out's transactions touch a thousand agents each):
// a watch further behind reads all. A move of more agents than
// listMoveAgents counts as one of every agent.
const (
	listMovesKept       = 4096
	listMovesAgentsKept = 1 << 16
	listMoveAgents      = 4096
)

// listMoves is the lists' count and its recent moves, oldest first, with
// the uuids they hold.
type listMoves struct {
	count  atomic.Uint64
	mu     sync.Mutex
	moves  []listMove
	agents int
}

// listMove is one move of the count: to count, touching agents (uuids;
// others' uuids may be among them), or every agent (all).
type listMove struct {
	count  uint64
	all    bool
	agents [][]string
}

// move moves the count by one, recording what the move touched.
func (m *listMoves) move(all bool, agents ...[]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Moved under the lock: a count read anywhere has its move kept by
	// the time since() can take the lock.
	n := m.count.Add(1)
	size := 0
	for _, list := range agents {
		size += len(list)
	}
	if all || size > listMoveAgents {
		all, agents, size = true, nil, 0
	}
	m.moves = append(m.moves, listMove{count: n, all: all, agents: agents})
	m.agents += size
	if len(m.moves) > listMovesKept || m.agents > listMovesAgentsKept {
		// The older half goes at once (a copy), the newest move stays:
		// since() tells a count before it from one after.
		k := 0
		for ; k < len(m.moves)-1 && (len(m.moves)-k > listMovesKept/2 || m.agents > listMovesAgentsKept/2); k++ {
			for _, list := range m.moves[k].agents {
				m.agents -= len(list)
			}
		}
		m.moves = slices.Delete(m.moves, 0, k)
	}
}

// since returns the agents the moves after count touched (each once), or
// all when one touched every agent or the moves kept do not reach back
// to count.
func (m *listMoves) since(count uint64) (uuids []string, all bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.moves, count+1, func(mv listMove, c uint64) int { return cmp.Compare(mv.count, c) })
	if i == len(m.moves) {
		return nil, false
	}
	if m.moves[i].count != count+1 {
		return nil, true // forgotten
	}
	seen := map[string]bool{}
	for _, mv := range m.moves[i:] {
		if mv.all {
			return nil, true
		}
		for _, list := range mv.agents {
			for _, u := range list {
				if !seen[u] {
					seen[u] = true
					uuids = append(uuids, u)
				}
			}
		}
	}
	return uuids, false
}
