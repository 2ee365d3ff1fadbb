package store

import (
	"fmt"
	"strings"
	"testing"

	"svcbridge/inventory"
)

// A read that began before a change is not kept after the change dropped
// the agent: the change may have committed after the read's snapshot.
func TestPollCacheKeepsNoReadOlderThanAChange(t *testing.T) {
	a1 := inventory.Agent{UUID: "u1", Name: "one"}
	for _, tc := range []struct {
		name   string
		change func(c *pollCache)
		kept   bool // the versions read
		cred   bool // the credential read
	}{
		{"no change", func(*pollCache) {}, true, true},
		{"versions of the agent", func(c *pollCache) { c.invalidate(changeVersions, []string{"u1"}) }, false, true},
		{"the agent", func(c *pollCache) { c.invalidate(changeAgent, []string{"u1"}) }, false, false},
		{"the feed restarted", func(c *pollCache) { c.reset() }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newPollCache()
			vgen, cgen := c.versionGen("u1"), c.credGen.Load()
			tc.change(c)
			ch := Changes{LastUpdated: 7}
			c.keepVersions(vgen, "u1", func(v *pollVersions) { v.changes = &ch })
			c.keepAgent(cgen, "hash-1", a1)
			if got := c.versions("u1").changes != nil; got != tc.kept {
				t.Errorf("versions kept: %v, want %v", got, tc.kept)
			}
			if _, got := c.agent("hash-1"); got != tc.cred {
				t.Errorf("credential kept: %v, want %v", got, tc.cred)
			}
		})
	}
}

func TestPollCacheInvalidation(t *testing.T) {
	c := newPollCache()
	keep := func(hash string, a inventory.Agent, version string) {
		c.keepAgent(c.credGen.Load(), hash, a)
		c.keepVersions(c.versionGen(a.UUID), a.UUID, func(v *pollVersions) { v.router = &version })
	}
	keep("h1", inventory.Agent{UUID: "u1"}, "1")
	keep("h2", inventory.Agent{UUID: "u2"}, "1")

	c.invalidate(changeVersions, []string{"u1"})
	if _, ok := c.agent("h1"); !ok {
		t.Error("a versions change dropped the credential")
	}
	if c.versions("u1").router != nil {
		t.Error("a versions change kept the version")
	}
	c.invalidate(changeAgent, []string{"u2"})
	if _, ok := c.agent("h2"); ok {
		t.Error("an agent change kept its credential")
	}
	if _, ok := c.agent("h1"); !ok {
		t.Error("an agent change dropped another agent's credential")
	}
}

// Past its bound the cache forgets credentials with their index entry, so
// that an agent change can always find what to drop.
func TestPollCacheBound(t *testing.T) {
	c := newPollCache()
	n := pollCacheAgents + pollCacheAgents/4
	for i := range n {
		c.keepAgent(c.credGen.Load(), fmt.Sprint("h", i), inventory.Agent{UUID: fmt.Sprint("u", i)})
	}
	creds, tokens := 0, 0
	for i := range c.shards {
		s := &c.shards[i]
		creds += len(s.creds)
		tokens += len(s.tokens)
	}
	if creds > pollCacheAgents || tokens > pollCacheAgents {
		t.Errorf("%d credentials and %d index entries kept, bound %d", creds, tokens, pollCacheAgents)
	}
	var orphans []string
	for i := range n {
		hash, u := fmt.Sprint("h", i), fmt.Sprint("u", i)
		if _, ok := c.agent(hash); !ok {
			continue
		}
		if s := c.shard(u); s.tokens[u] != hash {
			orphans = append(orphans, hash)
		}
	}
	if len(orphans) > 0 {
		t.Errorf("%d credentials kept without their index entry: %s", len(orphans), strings.Join(orphans[:min(5, len(orphans))], ", "))
	}
}
