package store

import (
	"sync"
	"time"
)

// waiters are the long polls waiting for an agent's poll answers (its row,
// change flags, router version) to change, or for a service to be
// written, by agent uuid or service name: the change feed wakes them, on
// this replica for its own commits and by NOTIFY for every other's.
type waiters struct {
	mu sync.Mutex
	by map[string]map[chan struct{}]struct{}
}

// watch registers a wait on key: a channel closed when it is woken, and
// a func that ends the wait.
func (w *waiters) watch(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[string]map[chan struct{}]struct{}{}
	}
	if w.by[key] == nil {
		w.by[key] = map[chan struct{}]struct{}{}
	}
	w.by[key][ch] = struct{}{}
	return ch, func() { w.remove(key, ch) }
}

// remove ends a wait that was not woken.
func (w *waiters) remove(key string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.by[key], ch)
	if len(w.by[key]) == 0 {
		delete(w.by, key)
	}
}

// wake ends the waits on uuids (every wait when all).
func (w *waiters) wake(uuids []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if all {
		uuids = nil
		for u := range w.by {
			uuids = append(uuids, u)
		}
	}
	for _, u := range uuids {
		for ch := range w.by[u] {
			close(ch)
		}
		delete(w.by, u)
	}
}

// WatchAgent returns a channel closed at the next change of what agent
// uuid's polls read, as the change feed delivers it, and a func that ends
// the wait. Call it before reading what the wait is about, so that a change
// committed in between is not missed. The feed delivers a change only while
// it is current (FeedCurrent); a long poll re-reads on a short interval
// otherwise.
func (s *Store) WatchAgent(uuid string) (changed <-chan struct{}, stop func()) {
	return s.feed.cache.waiting.watch(uuid)
}

// FeedCurrent reports whether this process's change feed is current, so
// that WatchAgent's channel can be relied on.
func (s *Store) FeedCurrent() bool { return s.feed.fresh(time.Now()) }

// ListedChanges is a count that moves with every change to what the API's
// lists show (an agent, its change flags, router version or router's
// report, a microservice, a service or its router entries), as the change
// feed delivers it, and whether the feed is current: while it is, a list
// read when the count was the same shows the same of the store. Take it
// before reading.
func (s *Store) ListedChanges() (count uint64, current bool) {
	count = s.feed.lists.count.Load()
	return count, s.feed.fresh(time.Now()) // a replica's first ask starts its listener
}

// ListedAgentsSince names the agents whose listing may have changed since
// ListedChanges' count was since: their uuids (among which may be uuids
// that are no agent's), or all when any may have (an agent written or
// deleted, which others show by name; changes missed; since older than the
// changes kept). Like the count, it is to be relied on only while current.
func (s *Store) ListedAgentsSince(since uint64) (uuids []string, all bool) {
	return s.feed.lists.since(since)
}

// WatchService returns a channel closed at the next commit that writes
// service name (its spec, status, reconcile requests, deletion or router
// entries), as the change feed delivers it, and a func that ends the wait.
// As with WatchAgent, call it before reading, and rely on it only while
// FeedCurrent.
func (s *Store) WatchService(name string) (changed <-chan struct{}, stop func()) {
	s.feed.startListening() // a replica serving no agent polls listens from its first wait
	return s.feed.services.watch(name)
}
