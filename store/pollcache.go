package store

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"svcbridge/inventory"
)

// What an agent's unchanged poll reads (its credential, change flags and
// router version) is answered from memory while the change feed says the
// cache is current (feed.go), so that a fleet polling every few seconds
// costs the database nothing until something changes. A miss reads the
// database in a transaction of its own and keeps what it read, unless a
// change of that agent came in meanwhile: a value read before a change
// committed is never kept after the change dropped it.

// pollShards spreads the cache over locks: a poll takes one shard's read
// lock or two, never a lock every poll waits for.
const pollShards = 64

// pollCacheAgents bounds the agents (and credentials) kept; beyond it an
// arbitrary one of the shard goes.
const pollCacheAgents = 1 << 18

// pollCache holds agents by their credential's hash and their versions by
// uuid.
type pollCache struct {
	seed   maphash.Seed
	shards [pollShards]pollShard
	// credMu makes a credential's fill (check, then store in two shards)
	// and a credential's invalidation one step each; both are rare.
	credMu sync.Mutex
	// credGen counts credential invalidations: a credential read is kept
	// only when none came in since it began (its agent is not known
	// before the read).
	credGen atomic.Uint64
	// waiting are the long polls to wake as agents' answers change.
	waiting waiters
}

type pollShard struct {
	mu sync.RWMutex
	// gen counts the invalidations of the shard's agents: a version read
	// is kept only when none came in since it began.
	gen      uint64
	creds    map[string]inventory.Agent // by token hash, in the hash's shard
	tokens   map[string]string          // agent uuid -> its token hash, in the uuid's shard
	versions map[string]pollVersions    // by agent uuid
}

// pollVersions are an agent's cached versions; nil: not read yet.
type pollVersions struct {
	changes *Changes
	router  *string
}

func newPollCache() *pollCache {
	c := &pollCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].clear()
	}
	return c
}

func (s *pollShard) clear() {
	s.creds, s.tokens, s.versions = map[string]inventory.Agent{}, map[string]string{}, map[string]pollVersions{}
}

func (c *pollCache) shard(key string) *pollShard {
	return &c.shards[maphash.String(c.seed, key)%pollShards]
}

// bound makes room for one more key in m, a shard's map.
func bound[V any](m map[string]V) {
	if len(m) < pollCacheAgents/pollShards {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}

// agent is the cached agent of a token hash.
func (c *pollCache) agent(hash string) (inventory.Agent, bool) {
	s := c.shard(hash)
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.creds[hash]
	return a, ok
}

// keepAgent stores what a credential read found, unless a credential
// changed since gen (credGen when the read began).
func (c *pollCache) keepAgent(gen uint64, hash string, a inventory.Agent) {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	if c.credGen.Load() != gen {
		return
	}
	s := c.shard(hash)
	s.mu.Lock()
	bound(s.creds)
	s.creds[hash] = a
	s.mu.Unlock()
	s = c.shard(a.UUID)
	s.mu.Lock()
	var evicted string
	if _, ok := s.tokens[a.UUID]; !ok && len(s.tokens) >= pollCacheAgents/pollShards {
		for u, h := range s.tokens {
			delete(s.tokens, u)
			evicted = h
			break
		}
	}
	s.tokens[a.UUID] = hash
	s.mu.Unlock()
	if evicted != "" {
		// A credential whose agent is not indexed could not be dropped
		// when the agent changes: it goes with its index entry.
		s = c.shard(evicted)
		s.mu.Lock()
		delete(s.creds, evicted)
		s.mu.Unlock()
	}
}

// versionGen is the generation a version read of uuid begins at.
func (c *pollCache) versionGen(uuid string) uint64 {
	s := c.shard(uuid)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// versions are the cached versions of an agent.
func (c *pollCache) versions(uuid string) pollVersions {
	s := c.shard(uuid)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.versions[uuid]
}

// keepVersions sets what set changes of uuid's versions, unless one of the
// shard's agents changed since gen.
func (c *pollCache) keepVersions(gen uint64, uuid string, set func(*pollVersions)) {
	s := c.shard(uuid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return
	}
	v, ok := s.versions[uuid]
	if !ok {
		bound(s.versions)
	}
	set(&v)
	s.versions[uuid] = v
}

// invalidate drops what a change of kind to the agents makes stale: their
// versions, and for changeAgent their credentials too.
func (c *pollCache) invalidate(kind byte, uuids []string) {
	if len(uuids) == 0 {
		return
	}
	defer c.waiting.wake(uuids, false)
	if kind == changeAgent {
		c.credMu.Lock()
		defer c.credMu.Unlock()
		c.credGen.Add(1)
	}
	for _, u := range uuids {
		s := c.shard(u)
		s.mu.Lock()
		s.gen++
		delete(s.versions, u)
		hash, cached := s.tokens[u]
		if kind == changeAgent {
			delete(s.tokens, u)
		}
		s.mu.Unlock()
		if kind == changeAgent && cached {
			hs := c.shard(hash)
			hs.mu.Lock()
			delete(hs.creds, hash)
			hs.mu.Unlock()
		}
	}
}

// reset forgets everything, and every read begun before it.
func (c *pollCache) reset() {
	defer c.waiting.wake(nil, true)
	c.credMu.Lock()
	defer c.credMu.Unlock()
	c.credGen.Add(1)
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.gen++
		s.clear()
		s.mu.Unlock()
	}
}

// AgentByToken finds the agent a credential (its hash) belongs to:
// from memory when the change feed allows, else from the database
// (ErrNotFound when no agent holds it).
func (s *Store) AgentByToken(ctx context.Context, hash string) (inventory.Agent, error) {
	c := s.feed.cache
	if s.feed.fresh(time.Now()) {
		if a, ok := c.agent(hash); ok {
			return a, nil
		}
	}
	gen := c.credGen.Load()
	var a inventory.Agent
	err := s.Read(ctx, func(tx *Tx) error {
		var err error
		a, err = tx.AgentByTokenHash(ctx, hash)
		return err
	})
	if err == nil {
		c.keepAgent(gen, hash, a)
	}
	return a, err
}

// PolledChanges is AgentChanges, from memory when the change feed allows.
func (s *Store) PolledChanges(ctx context.Context, agentUUID string) (Changes, error) {
	return polled(ctx, s, agentUUID, (*Tx).AgentChanges,
		func(v pollVersions) *Changes { return v.changes },
		func(v *pollVersions, ch *Changes) { v.changes = ch })
}

// PolledRouterVersion is RouterVersion, from memory when the change feed
// allows.
func (s *Store) PolledRouterVersion(ctx context.Context, agentUUID string) (string, error) {
	return polled(ctx, s, agentUUID, (*Tx).RouterVersion,
		func(v pollVersions) *string { return v.router },
		func(v *pollVersions, r *string) { v.router = r })
}

// polled reads one of an agent's versions: the cached one (get) when the
// feed allows, else read's, which is kept (set) unless the agent changed
// meanwhile.
func polled[T any](ctx context.Context, s *Store, uuid string, read func(*Tx, context.Context, string) (T, error),
	get func(pollVersions) *T, set func(*pollVersions, *T)) (T, error) {
	c := s.feed.cache
	if s.feed.fresh(time.Now()) {
		if v := get(c.versions(uuid)); v != nil {
			return *v, nil
		}
	}
	gen := c.versionGen(uuid)
	var v T
	err := s.Read(ctx, func(tx *Tx) error {
		var err error
		v, err = read(tx, ctx, uuid)
		return err
	})
	if err == nil {
		c.keepVersions(gen, uuid, func(pv *pollVersions) { set(pv, &v) })
	}
	return v, err
}
