package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"svcbridge/auth"
	"svcbridge/wire"
)

// Watches (?watch=true on a list route), as Kubernetes' watch: a
// long-lived answer of JSON lines, one event per change,
// {"type": "ADDED"|"MODIFIED"|"DELETED", "object": ...}. It starts with
// an ADDED event for every item and a BOOKMARK (object {}) after them, so
// a client that reconnects gets the whole current state again, knows
// when it has it (what it had and is not in it was deleted meanwhile),
// and loses nothing. The store keeps no change log a client could resume
// from, so the reading is the server's: a client never polls. All
// watches of one list share one feed, which looks every
// Options.WatchInterval, reads the list again if its change count
// (listChanges) moved (of the agents, only those that changed) and sends
// each watcher what changed, so a hundred watchers cost the store what
// one does, and an idle fleet nothing. A watcher more than
// Limits.WatchBuffer reads behind is dropped: its stream ends with
// {"type": "ERROR", "object": {"name", "message"}}, and it may reconnect.
// Limits.WatchMax and WatchMaxPerClient bound the watches open.

// DefaultWatchInterval is how often a watch reads its list again, unless
// Options.WatchInterval says otherwise.
const DefaultWatchInterval = time.Second

// watchRereadAfter is how long a feed goes without reading its list
// however still its change count: a replica of the version before the
// count (in a rolling upgrade) writes without moving it.
const watchRereadAfter = time.Minute

// watchWriteTimeout bounds one write to a watcher: a client whose TCP
// window stays shut that long has stopped reading, and its watch ends.
const watchWriteTimeout = 30 * time.Second

// watchEvent is one line of a watch.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watchItem is one item of a watched list: its key and how it is shown,
// as JSON.
type watchItem struct {
	key    string
	object json.RawMessage
}

// watchKey is the key of a watched item whose list key is parts: the one
// part itself, as most lists are keyed by a name (a feed reads thousands
// every second), else the parts as JSON.
func watchKey(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	k, _ := json.Marshal(parts) // strings: cannot fail
	return string(k)
}

// wantsWatch reports whether c asks for a watch (?watch=true); a value
// other than true or false is a 400 already answered.
func wantsWatch(c *gin.Context) (watch, ok bool) {
	switch c.Query("watch") {
	case "", "false":
		return false, true
	case "true":
		return true, true
	}
	fail(c, badRequest("Query parameter 'watch' must be true or false"))
	return false, false
}

// watchRetryAfter is the Retry-After, in seconds, of a watch refused for
// too many watches.
const watchRetryAfter = "10"

// watchRead reads a watched list. last is each item as the feed's last
// read showed it, by key (nil for a feed's first read): a feed reads its
// list every second and most items encode as they did, so an item whose
// object equals its last one's should be that one, not a copy. only, when
// not nil, names the items (by the ids listChanges.since gives) that may
// have changed since the last read: the rest show as they did.
type watchRead func(c *gin.Context, last map[string][]byte, only []string) ([]watchItem, error)

// listChanges tells a list's feed when to read it again, and what.
type listChanges struct {
	// count moves with every change to what the list shows, and says
	// whether it can be relied on now (store.ListedChanges): while it
	// can, a read when it was the same would show the same.
	count func() (count uint64, current bool)
	// since, for a list that can read some of its items, names the items
	// that may have changed since count was at a value, or all
	// (store.ListedAgentsSince); nil: a change rereads the whole list.
	since func(count uint64) (ids []string, all bool)
}

// watchReadSome bounds the items a feed reads by their ids: more are read
// with the whole list.
const watchReadSome = 1000

// watch streams the changes of the list read returns until the client
// goes or falls behind. The write deadline (HTTP_WRITE_TIMEOUT) is lifted
// for this request, each write bounded by watchWriteTimeout instead.
func (s *Server) watch(c *gin.Context, changes listChanges, read watchRead) {
	w, initial, err := s.watches.join(c, changes, read)
	if err != nil {
		if errors.Is(err, errTooManyWatches) {
			c.Header("Retry-After", watchRetryAfter)
		}
		fail(c, err)
		return
	}
	defer s.watches.leave(w)
	rc := http.NewResponseController(c.Writer)
	c.Header("Content-Type", "application/jsonl; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	send := func(lines []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		if _, err := c.Writer.Write(lines); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(initial) {
		return
	}
	for {
		select {
		case <-c.Request.Context().Done():
			return
		case lines := <-w.lines:
			if !send(lines) {
				return
			}
		case <-w.ended:
			line, _ := json.Marshal(struct {
				Type   string     `json:"type"`
				Object wire.Error `json:"object"`
			}{"ERROR", w.reason})
			send(append(line, '\n'))
			return
		}
	}
}

var errTooManyWatches = apiErr(http.StatusTooManyRequests, "TooManyRequestsError", "Too many watches are open")

// watchHub holds the open watches: one feed per watched list, and the
// counts the limits bound.
type watchHub struct {
	log      *slog.Logger
	limits   Limits
	interval time.Duration
	mu       sync.Mutex
	open     int
	byClient map[string]int
	feeds    map[string]*watchFeed
}

func newWatchHub(log *slog.Logger, l Limits, interval time.Duration) *watchHub {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	return &watchHub{log: log, limits: l, interval: interval, byClient: map[string]int{}, feeds: map[string]*watchFeed{}}
}

// watchFeed reads one list for all its watchers.
type watchFeed struct {
	route    string
	watchers map[*watcher]struct{}
	last     map[string][]byte // each item as last read, by key
	// spare is the map of the read before last, cleared and filled by the
	// next: a map of every item, made anew every second, was most of a
	// watch's garbage.
	spare map[string][]byte
	items []watchItem // the last read that changed something
	// changes is the list's change count, and seen its value when the
	// last read began: the feed reads again only once it moved (only the
	// items that changed, when the list can say which), while it cannot be
	// relied on, or watchRereadAfter after the last whole read, readAt.
	changes listChanges
	seen    uint64
	readAt  time.Time
	// initial is what a new watcher is sent first: an ADDED line for each
	// of items, then a BOOKMARK; nil until a watcher joins after items
	// changed. Built every read, it was most of a watch's cost: the
	// lines of 10,000 services are 8.6 MB.
	initial []byte
	stop    context.CancelFunc
}

// watcher is one watch of a feed.
type watcher struct {
	feed   *watchFeed
	client string
	lines  chan []byte   // the changes of each read, shared by the feed's watchers
	ended  chan struct{} // closed when the feed drops the watcher, for reason
	reason wire.Error
}

// watchClient is who a watch counts against: its user, else its address.
func watchClient(c *gin.Context) string {
	if p, ok := c.Get(principalKey); ok {
		return "user " + p.(auth.Principal).Subject
	}
	return "address " + c.RemoteIP()
}

// canWatch decides whether one more watch may open, given the watches
// open in the process and for its client.
func canWatch(l Limits, open, client int) bool {
	return open < l.WatchMax && client < l.WatchMaxPerClient
}

// join opens a watch of c's list: the watcher and the lines to send it
// first. The list's first watcher reads it (an error is its answer) and
// starts its feed.
func (h *watchHub) join(c *gin.Context, changes listChanges, read watchRead) (*watcher, []byte, error) {
	client, route := watchClient(c), feedKey(c)
	h.mu.Lock()
	if !canWatch(h.limits, h.open, h.byClient[client]) {
		h.mu.Unlock()
		return nil, nil, errTooManyWatches
	}
	h.open++
	h.byClient[client]++
	feed := h.feeds[route]
	h.mu.Unlock()
	w := &watcher{client: client, lines: make(chan []byte, h.limits.WatchBuffer), ended: make(chan struct{})}
	if feed == nil {
		seen, _ := changes.count()
		items, err := read(c, nil, nil)
		if err != nil {
			h.mu.Lock()
			h.release(w)
			h.mu.Unlock()
			return nil, nil, err
		}
		h.mu.Lock()
		if feed = h.feeds[route]; feed == nil { // none made meanwhile
			feed = h.startFeed(c, route, read, items, changes, seen)
		}
	} else {
		h.mu.Lock()
	}
	defer h.mu.Unlock()
	w.feed = feed
	feed.watchers[w] = struct{}{}
	return w, feed.initialLines(), nil
}

// feedKey names the feed a watch shares: its route and what narrows the
// list (?application=...), so that watchers share a read only when they
// ask for the same items.
func feedKey(c *gin.Context) string {
	q := c.Request.URL.Query()
	for _, k := range []string{"watch", "limit", "continue"} {
		q.Del(k)
	}
	if len(q) == 0 {
		return c.FullPath()
	}
	return c.FullPath() + "?" + q.Encode()
}

// release uncounts w; h.mu is held.
func (h *watchHub) release(w *watcher) {
	h.open--
	if h.byClient[w.client]--; h.byClient[w.client] == 0 {
		delete(h.byClient, w.client)
	}
}

// leave closes w's watch; its feed stops with its last watcher.
func (h *watchHub) leave(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release(w)
	h.remove(w)
}

// remove takes w from its feed, if the feed still has it; h.mu is held.
func (h *watchHub) remove(w *watcher) {
	f := w.feed
	if _, ok := f.watchers[w]; !ok {
		return
	}
	delete(f.watchers, w)
	if len(f.watchers) == 0 {
		f.stop()
		delete(h.feeds, f.route)
	}
}

// startFeed starts the feed of route from its first read, begun when its
// change count was seen; h.mu is held.
// The feed reads with a copy of the first watcher's request, detached from
// it: the feed outlives any one watcher.
func (h *watchHub) startFeed(c *gin.Context, route string, read watchRead, items []watchItem, changes listChanges, seen uint64) *watchFeed {
	ctx, stop := context.WithCancel(context.WithoutCancel(c.Request.Context()))
	f := &watchFeed{route: route, watchers: map[*watcher]struct{}{}, stop: stop, changes: changes, seen: seen, readAt: time.Now()}
	f.update(items)
	h.feeds[route] = f
	reader := c.Copy()
	reader.Request = reader.Request.WithContext(ctx)
	// f.last is run's alone from here on: only its update writes it.
	go h.run(ctx, f, func(only []string) ([]watchItem, error) { return read(reader, f.last, only) })
	return f
}

// update takes a read of the list: the lines of what changed since the
// last (nil when nothing did). h.mu is held.
func (f *watchFeed) update(items []watchItem) []byte {
	now := f.spare
	if now == nil {
		now = make(map[string][]byte, len(items))
	}
	clear(now)
	events := watchDiff(f.last, items, now)
	f.last, f.spare = now, f.last
	if len(events) > 0 || f.items == nil {
		f.items, f.initial = items, nil
	}
	return watchLines(events)
}

// initialLines is f.initial, built if need be; h.mu is held.
func (f *watchFeed) initialLines() []byte {
	if f.initial == nil {
		var b []byte
		for _, it := range f.items {
			b = appendWatchLine(b, watchEvent{"ADDED", it.object})
		}
		f.initial = appendWatchLine(b, watchEvent{"BOOKMARK", json.RawMessage("{}")})
	}
	return f.initial
}

func watchLines(events []watchEvent) []byte {
	var b []byte
	for _, e := range events {
		b = appendWatchLine(b, e)
	}
	return b
}

// appendWatchLine appends e's line as json.Marshal writes it: e.Object is
// what json.Marshal wrote (appendJSON), compact and escaped already, so
// it is copied rather than checked again byte by byte.
func appendWatchLine(b []byte, e watchEvent) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, e.Type...)
	b = append(b, `","object":`...)
	b = append(b, e.Object...)
	return append(b, "}\n"...)
}

// run reads f's list every interval until f stops, and sends each watcher
// what changed; a watcher whose buffer is full is dropped. A failed read
// ends every watch of f: the stream has begun, so a status can no longer
// say so, and the clients reconnect.
func (h *watchHub) run(ctx context.Context, f *watchFeed, read func(only []string) ([]watchItem, error)) {
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		skip, only := f.next()
		if skip {
			continue
		}
		items, err := read(only)
		h.mu.Lock()
		if ctx.Err() != nil {
			h.mu.Unlock()
			return
		}
		if err != nil {
			h.log.WarnContext(ctx, "watch read failed", "route", f.route, "error", err)
			for w := range f.watchers {
				h.drop(w, "UnavailableError", "The list could not be read; watch again")
			}
			h.mu.Unlock()
			return
		}
		if lines := f.update(items); len(lines) > 0 {
			for w := range f.watchers {
				select {
				case w.lines <- lines:
				default:
					h.drop(w, "TooSlowError", "The watch fell "+strconv.Itoa(h.limits.WatchBuffer)+" reads of changes behind; watch again")
				}
			}
		}
		h.mu.Unlock()
	}
}

// next decides f's next read: skip when its list is known to show what it
// showed at its last read; else the read about to begin is recorded as
// the last, and only, unless nil, names the only items that may have
// changed. The whole list is read while the count cannot be relied on,
// and once a minute.
func (f *watchFeed) next() (skip bool, only []string) {
	count, current := f.changes.count()
	current = current && time.Since(f.readAt) < watchRereadAfter
	if current && count == f.seen {
		return true, nil
	}
	since := f.seen
	f.seen = count
	if current && f.changes.since != nil {
		ids, all := f.changes.since(since)
		switch {
		case !all && len(ids) == 0:
			return true, nil // nothing it shows
		case !all && len(ids) <= watchReadSome:
			return false, ids
		}
	}
	f.readAt = time.Now()
	return false, nil
}

// drop ends w's watch for a reason; h.mu is held.
func (h *watchHub) drop(w *watcher, name, message string) {
	h.log.Info("watch dropped", "route", w.feed.route, "client", w.client, "reason", name)
	w.reason = wire.Error{Name: name, Message: message}
	close(w.ended)
	h.remove(w)
}

// watchDiff compares items with the last objects sent, by key: the events
// to send (ADDED and MODIFIED in the list's order, then DELETED, with the
// object last sent, by key). It puts the objects now in now, empty.
func watchDiff(last map[string][]byte, items []watchItem, now map[string][]byte) []watchEvent {
	var events []watchEvent
	for _, it := range items {
		now[it.key] = it.object
		before, seen := last[it.key]
		switch {
		case !seen:
			events = append(events, watchEvent{"ADDED", it.object})
		case !bytes.Equal(before, it.object):
			events = append(events, watchEvent{"MODIFIED", it.object})
		}
	}
	var gone []string
	for k := range last {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		events = append(events, watchEvent{"DELETED", last[k]})
	}
	return events
}

// watchVersions is what a feed's items were last shown at (listShow): the
// version of each, by key, and the context of the read.
type watchVersions struct {
	reads   uint64 // reads begun
	context uint64 // the last read's
	same    bool   // this read's context is the last read's
	byKey   map[string]shownVersion
}

// shownVersion is an item's version at the read numbered read.
type shownVersion struct {
	version int64
	read    uint64
}

// begin starts a read in context.
func (w *watchVersions) begin(context uint64) {
	w.same = w.reads > 0 && context == w.context
	w.context = context
	w.reads++
}

// unchanged records that the item of key is at version in this read, and
// reports whether it was at that version in the same context at the read
// before: it then shows as it did. Version 0 is none.
func (w *watchVersions) unchanged(key string, version int64) bool {
	if version == 0 {
		return false
	}
	if w.byKey == nil {
		w.byKey = map[string]shownVersion{}
	}
	before, ok := w.byKey[key]
	w.byKey[key] = shownVersion{version, w.reads}
	return w.same && ok && before.read == w.reads-1 && before.version == version
}

// end ends a read of n items, forgetting the items it did not have.
func (w *watchVersions) end(n int) {
	if len(w.byKey) > n {
		maps.DeleteFunc(w.byKey, func(_ string, v shownVersion) bool { return v.read != w.reads })
	}
}
