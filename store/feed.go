package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// The change feed tells each API process, as transactions commit, which
// agents' poll answers changed (pollcache.go keeps them): their
// credentials and router (an agent row written or deleted), or their
// change flags and router document's version; and which services were
// written, for the long polls waiting on them; and whether anything the
// API's lists show changed, for their watches. A transaction names the
// agents, microservices and services it writes (touch); after its commit
// the feed invalidates this process's cache and wakes its waits at once,
// and on PostgreSQL the same names go to every other process by NOTIFY,
// sent inside the transaction so that it is delivered exactly when, and
// only if, it commits. SQLite's store is one process's (dev): there the
// in-process step is the whole feed.
//
// LISTEN/NOTIFY rather than a version row polled once per interval: a
// change reaches every replica in milliseconds instead of an interval,
// the store does no work while nothing changes, and PostgreSQL delivers
// notifications in commit order, which a polled sequence (numbered at
// insert, committed in any order) cannot promise without more machinery.
// A replica serves from memory only while its listener is known to be
// current: it sends itself a heartbeat every heartbeatEvery, and an answer
// is fresh while the last heartbeat it got back was sent less than
// staleAfter ago; everything committed before that heartbeat was sent was
// delivered before it. A lost listener connection stops the cache at once
// and empties it when the listener is back.

// feedChannel is the PostgreSQL channel of the feed's agents and
// heartbeats; servicesChannel carries its services and listedChannel the
// rest of what lists show, each on a channel of its own so that a replica
// of a version before them (in a rolling upgrade) never receives them (it
// would take them for a change to anything).
const (
	feedChannel     = "svcbridge_agents"
	servicesChannel = "svcbridge_services"
	listedChannel   = "svcbridge_listed"
)

// Change kinds: the first letter of a notification's payload.
const (
	// changeAgent: an agent row written or deleted (its credential, name,
	// router mode): everything cached of the agent goes.
	changeAgent = 'a'
	// changeVersions: an agent's change flags or router version moved.
	changeVersions = 'v'
	// changeService: a service's row or its router entries written.
	changeService = 's'
	// changeListed: what the lists show of an agent or a microservice
	// changed, and nothing that polls read: a router's report (by its
	// agent's uuid), a microservice written (by its uuid).
	changeListed = 'l'
	// heartbeat: a process's own heartbeat, with its send time.
	heartbeat = 'h'
)

const (
	// heartbeatEvery is how often a listening process sends itself a
	// heartbeat, and staleAfter how old the last one it got back may be
	// for the cache to answer: a change missed by a listener that broke
	// silently is served for at most staleAfter.
	heartbeatEvery = 250 * time.Millisecond
	staleAfter     = time.Second
	// relistenAfter: a listener whose heartbeats stopped coming back for
	// this long while they could be sent is replaced.
	relistenAfter = 5 * time.Second
	// maxPayload keeps a notification within PostgreSQL's 8000 bytes.
	maxPayload = 7900
)

// touched is what one transaction changed, by kind: agents' uuids,
// services' names or the uuids of what else lists show.
type touched struct {
	agents, versions, services, listed []string
}

// touch records that the transaction changes what polls read of agents
// (kind changeAgent or changeVersions), writes services (changeService)
// or changes what else the lists show (changeListed).
func (t *Tx) touch(kind byte, keys ...string) { t.touched.add(kind, keys) }

// add records keys as touched by a change of kind.
func (w *touched) add(kind byte, keys []string) {
	switch kind {
	case changeAgent:
		w.agents = append(w.agents, keys...)
	case changeVersions:
		w.versions = append(w.versions, keys...)
	case changeListed:
		w.listed = append(w.listed, keys...)
	default:
		w.services = append(w.services, keys...)
	}
}

// payloads are the notifications of what a transaction touched: each a
// kind letter and agent uuids or service names (DNS labels) joined by
// commas, within maxPayload.
func (w touched) payloads() []string {
	var out []string
	for _, k := range []struct {
		kind  byte
		uuids []string
	}{{changeAgent, w.agents}, {changeVersions, w.versions}, {changeService, w.services}, {changeListed, w.listed}} {
		uuids := slices.Compact(slices.Sorted(slices.Values(k.uuids)))
		var b strings.Builder
		for _, u := range uuids {
			if b.Len() > 0 && b.Len()+1+len(u) > maxPayload {
				out = append(out, b.String())
				b.Reset()
			}
			if b.Len() == 0 {
				b.WriteByte(k.kind)
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(u)
		}
		if b.Len() > 0 {
			out = append(out, b.String())
		}
	}
	return out
}

// notification is a payload read back: its kind and agents, or a
// heartbeat's sender and send time.
type notification struct {
	kind   byte
	uuids  []string
	sender string
	sent   time.Time
}

// parsePayload reads a payload; ok is false for one this version of
// svcbridge does not know (a newer replica's), which the listener treats
// as a change to anything.
func parsePayload(p string) (n notification, ok bool) {
	if len(p) < 2 || p[1] != ':' {
		return n, false
	}
	n.kind = p[0]
	switch n.kind {
	case changeAgent, changeVersions, changeService, changeListed:
		n.uuids = strings.Split(p[2:], ",")
		return n, true
	case heartbeat:
		sender, sent, found := strings.Cut(p[2:], ":")
		ns, err := strconv.ParseInt(sent, 10, 64)
		if !found || err != nil {
			return n, false
		}
		n.sender, n.sent = sender, time.Unix(0, ns)
		return n, true
	}
	return n, false
}

// notify sends what the transaction touched to the other processes; the
// notifications are delivered at its commit.
func (t *Tx) notify(ctx context.Context) error {
	if t.dialect != Postgres {
		return nil
	}
	payloads := t.touched.payloads()
	if len(payloads) == 0 {
		return nil
	}
	channels := make(pq.StringArray, len(payloads))
	for i, p := range payloads {
		switch p[0] {
		case changeService:
			channels[i] = servicesChannel
		case changeListed:
			channels[i] = listedChannel
		default:
			channels[i] = feedChannel
		}
	}
	_, err := t.exec(ctx, `SELECT pg_notify(c, p) FROM unnest(?::text[], ?::text[]) AS n (c, p)`, channels, pq.StringArray(payloads))
	return err
}

// feed is a process's end of the change feed: it applies changes to the
// cache and says whether the cache is current.
type feed struct {
	cache *pollCache
	// services are the long polls waiting for services to be written.
	services waiters
	// lists is the count of changes to what the API's lists show (every
	// transaction that touched anything, and a possible miss), with which
	// agents each recent one touched (listmoves.go): a watch of a list
	// reads it again only once the count moved.
	lists listMoves
	// listen starts the PostgreSQL listener at the first cached read; nil
	// on SQLite, where every change is in-process.
	listen func()
	// freshUntil is until when (UnixNano) the cache may answer; on
	// PostgreSQL a heartbeat moves it. down: the listener lost its
	// connection and the cache was not emptied since.
	freshUntil atomic.Int64
	down       atomic.Bool
}

// apply drops what a transaction touched from the cache, wakes the waits
// on the services it wrote and moves the lists' count: called after its
// commit, and for another process's as its notification comes.
func (f *feed) apply(w touched) {
	if len(w.agents)+len(w.versions)+len(w.services)+len(w.listed) > 0 {
		// An agent row written may change how others show (their
		// upstream routers' names, the default router): all of them.
		f.lists.move(len(w.agents) > 0, w.versions, w.listed)
	}
	f.cache.invalidate(changeAgent, w.agents)
	f.cache.invalidate(changeVersions, w.versions)
	f.services.wake(w.services, false)
}

// forget empties the cache, wakes every wait on a service and moves what
// the lists' watches compare: changes may have been missed.
func (f *feed) forget() {
	f.lists.move(true)
	f.cache.reset()
	f.services.wake(nil, true)
}

// fresh reports whether the cache may answer now.
func (f *feed) fresh(now time.Time) bool {
	if f.listen == nil {
		return true
	}
	f.listen()
	return !f.down.Load() && now.UnixNano() < f.freshUntil.Load()
}

// startListening starts the PostgreSQL listener if it has not started.
func (f *feed) startListening() {
	if f.listen != nil {
		f.listen()
	}
}

// listener is a PostgreSQL process's LISTEN connection and heartbeat.
type listener struct {
	f      *feed
	s      *Store
	dsn    string
	sender string // this process's name in heartbeats
	stop   chan struct{}
	done   chan struct{}
	// lastBeat is when the last heartbeat came back (UnixNano).
	lastBeat atomic.Int64
}

// startListener returns the function that starts s's listener once.
func startListener(s *Store, dsn string) (start func(), stop func()) {
	b := make([]byte, 8)
	rand.Read(b)
	l := &listener{f: s.feed, s: s, dsn: dsn, sender: hex.EncodeToString(b), stop: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	started := false
	start = func() {
		once.Do(func() {
			started = true
			go l.run()
		})
	}
	stop = func() {
		once.Do(func() {}) // no start after the stop
		if started {
			close(l.stop)
			<-l.done
		}
	}
	return start, stop
}

// run listens until stopped, replacing a listener whose heartbeats stop
// coming back.
func (l *listener) run() {
	defer close(l.done)
	for {
		if !l.session() {
			return
		}
	}
}

// session runs one pq.Listener: false once stopped.
func (l *listener) session() bool {
	lost := func() {
		// Nothing served from memory until the listener is back and the
		// cache emptied (clear).
		l.f.down.Store(true)
	}
	pl := pq.NewListener(l.dsn, 100*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, err error) {
		if ev == pq.ListenerEventDisconnected || ev == pq.ListenerEventConnectionAttemptFailed {
			lost()
			slog.Default().Warn("change feed: listener connection lost; polls read the database until it is back", "error", err)
		}
	})
	defer pl.Close()
	defer lost()
	// Listen connects; until it succeeds there is nothing to serve.
	for {
		var err error
		for _, channel := range []string{feedChannel, servicesChannel, listedChannel} {
			if err = pl.Listen(channel); err != nil && err != pq.ErrChannelAlreadyOpen {
				break
			}
		}
		if err == nil || err == pq.ErrChannelAlreadyOpen {
			break
		}
		select {
		case <-l.stop:
			return false
		case <-time.After(time.Second):
		}
	}
	l.clear()
	l.lastBeat.Store(time.Now().UnixNano())
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return false
		case n := <-pl.Notify:
			if n == nil { // reconnected
				l.clear()
				continue
			}
			l.receive(n.Extra)
		case <-tick.C:
			if l.beat() && time.Since(time.Unix(0, l.lastBeat.Load())) > relistenAfter {
				slog.Default().Warn("change feed: heartbeats stopped coming back; listening anew")
				return true
			}
		}
	}
}

// clear empties the cache once listening: it may have missed changes
// committed while the process was not.
func (l *listener) clear() {
	l.f.forget()
	l.f.down.Store(false)
}

// receive applies one notification.
func (l *listener) receive(payload string) {
	n, ok := parsePayload(payload)
	switch {
	case !ok:
		l.f.forget()
	case n.kind == heartbeat:
		if n.sender == l.sender {
			l.lastBeat.Store(time.Now().UnixNano())
			// Every change committed before n.sent has been applied.
			l.f.freshUntil.Store(n.sent.Add(staleAfter).UnixNano())
		}
	default:
		var w touched
		w.add(n.kind, n.uuids)
		l.f.apply(w)
	}
}

// beat sends a heartbeat; false when it could not.
func (l *listener) beat() bool {
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
	defer cancel()
	payload := string(heartbeat) + ":" + l.sender + ":" + strconv.FormatInt(time.Now().UnixNano(), 10)
	_, err := l.s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, feedChannel, payload)
	return err == nil
}
