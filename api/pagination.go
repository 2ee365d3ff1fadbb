package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"svcbridge/document"
)

// ContinueHeader carries the token of the next page of a list asked for
// with ?limit=. The body stays a bare JSON array, as ioFog clients read
// it; the header is absent on the last page.
const ContinueHeader = "X-Continue"

// MaxLimit is the most items one page holds. A larger ?limit= is served
// as MaxLimit items and the next page's token, as Kubernetes' API server
// may answer fewer items than asked: a client that follows the token (as
// kubectl and the CLI do) reads everything, and what a request makes the
// server hold is bounded before anything is read. 500 is kubectl's chunk
// size and the CLI's page.
const MaxLimit = 500

// maxContinue bounds ?continue=: the longest key a list pages by, an
// event's (a timestamp, a service name, a sequence number), encodes in
// under 200 characters.
const maxContinue = 512

// pageQuery is a list request's ?limit= and ?continue=.
type pageQuery struct {
	limit int      // 0: no limit; else at most MaxLimit
	after []string // the key of the last item already served; nil: from the start
	// only, unless nil, names by id the items a watch's feed reads (those
	// listChanges.since named); read may read just those.
	only []string
}

// parsePage reads ?limit= (a positive integer, MaxLimit when larger) and
// ?continue= (a token from ContinueHeader), as Kubernetes' list calls
// take them.
func parsePage(limit, cont string) (pageQuery, error) {
	var q pageQuery
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if errors.Is(err, strconv.ErrRange) && n > 0 {
			err = nil // beyond int: clamped as any other large limit
		}
		if err != nil || n < 1 {
			return q, badRequest("Query parameter 'limit' must be a positive integer")
		}
		q.limit = min(n, MaxLimit)
	}
	if cont != "" {
		if q.after = continueKey(cont); q.after == nil {
			return q, badContinue()
		}
	}
	return q, nil
}

// continueKey returns the key a token of continueToken's holds, nil for
// any other text: one at most maxContinue long, exactly the encoding of a
// key (so that its JSON hides no invalid UTF-8 or lone surrogate, which
// decoding turns into U+FFFD) whose every item passes the text rule, as
// every parameter does.
func continueKey(token string) []string {
	if len(token) > maxContinue {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	var key []string
	if err != nil || json.Unmarshal(b, &key) != nil || len(key) == 0 || continueToken(key) != token {
		return nil
	}
	for _, item := range key {
		if document.TextProblem(item) != "" {
			return nil
		}
	}
	return key
}

// badContinue answers a ?continue= that no answer of this API gave.
func badContinue() *Error {
	return badRequest("Query parameter 'continue' is not a token this API gave")
}

// continueToken is the opaque token that resumes after key. The key, not
// a position: a page is right even when items before it were deleted
// meanwhile.
func continueToken(key []string) string {
	b, _ := json.Marshal(key)
	return base64.RawURLEncoding.EncodeToString(b)
}

// listShow is how a list shows the items read: item(i, v) is item i, in
// or from v (it may be called from several goroutines at once, each with
// its own v; see writeJSONArray).
//
// A watch reads its whole list every second, and most items show as they
// did: encoding thousands again only to find them equal was most of a
// watch's work and garbage. So a list whose items have versions says,
// with version(i), item i's (0: none), and with context a digest of all
// else that shows the items (what they refer to, by name); an item whose
// version and context are those it had at the read before shows as it
// did then, and is not shown again.
type listShow[V any] struct {
	item    func(int, *V) any
	version func(int) int64
	context uint64
}

// showEach is serveList's show of answer, applied to each item, with the
// names of what the items refer to (refer adds those of one).
func showEach[T, A any](s *Server, c *gin.Context, refer func(*nameRefs, T), answer func(T, names) A) func([]T) (listShow[A], error) {
	return func(items []T) (listShow[A], error) {
		var refs nameRefs
		for _, it := range items {
			refer(&refs, it)
		}
		n, err := s.readNamesOf(c, refs)
		if err != nil {
			return listShow[A]{}, err
		}
		return listShow[A]{item: func(i int, a *A) any {
			*a = answer(items[i], n)
			return a
		}}, nil
	}
}

// paginate returns the page of items (sorted by key, ascending byte
// order, as the store lists them) that q asks for, and the token of the
// next page ("" on the last).
func paginate[T any](items []T, key func(T) []string, q pageQuery) ([]T, string) {
	if q.after != nil {
		i, _ := slices.BinarySearchFunc(items, q.after, func(it T, after []string) int { return slices.Compare(key(it), after) })
		for i < len(items) && slices.Compare(key(items[i]), q.after) <= 0 {
			i++
		}
		items = items[i:]
	}
	if q.limit == 0 || len(items) <= q.limit {
		return items, ""
	}
	return items[:q.limit], continueToken(key(items[q.limit-1]))
}

// serveList answers a list route: the page of what read returns that c
// asks for (?limit=, ?continue=; the next page's token in
// ContinueHeader), or with ?watch=true its changes as they come (see
// watch). Items are sorted by key; show(page)(i, v) is how the page's item
// i is shown, in v or from it (show may read what the page refers to; the
// function it returns is called from several goroutines at once, see
// writeJSONArray). read may narrow what it reads to the page it is given
// (at least its limit+1 items after its key, when there are that many); a
// watch reads everything, then again each time changes moved (only the
// items changes.since names, given in q.only, when it names them). A bad
// query is a 400.
func serveList[T, V any](s *Server, c *gin.Context, changes listChanges, read func(*gin.Context, pageQuery) ([]T, error), key func(T) []string, show func([]T) (listShow[V], error)) {
	serveListIn(s, c, "", changes, read, key, show)
}

// serveListIn is serveList answering the page as {"<field>": [...]}, as
// the reference controller lists some kinds; "" answers the bare array.
func serveListIn[T, V any](s *Server, c *gin.Context, field string, changes listChanges, read func(*gin.Context, pageQuery) ([]T, error), key func(T) []string, show func([]T) (listShow[V], error)) {
	watch, ok := wantsWatch(c)
	if !ok {
		return
	}
	q, err := parsePage(c.Query("limit"), c.Query("continue"))
	if err != nil {
		fail(c, err)
		return
	}
	if watch {
		l := &watchedList[T, V]{read: read, key: key, show: show}
		s.watch(c, changes, l.readWatch)
		return
	}
	items, err := read(c, q)
	if err != nil {
		fail(c, err)
		return
	}
	page, next := paginate(items, key, q)
	if next != "" {
		c.Header(ContinueHeader, next)
	}
	sh, err := show(page)
	if err != nil {
		fail(c, err)
		return
	}
	writeJSONArray(c, field, len(page), sh.item)
}

// watchedList is a list as its watch's feed reads it, one read at a time.
type watchedList[T, V any] struct {
	read func(*gin.Context, pageQuery) ([]T, error)
	key  func(T) []string
	show func([]T) (listShow[V], error)
	// shownAt are the versions and context each item was last shown at.
	shownAt watchVersions
	// shown is the list as the last read showed it, and at each key's
	// place in it, made when a read of some items needs it.
	shown []watchItem
	at    map[string]int
}

// readWatch is the feed's read (watchRead): the whole list, or with only
// the items named, in the list as it was shown.
func (l *watchedList[T, V]) readWatch(c *gin.Context, last map[string][]byte, only []string) ([]watchItem, error) {
	items, err := l.read(c, pageQuery{only: only})
	if err != nil {
		return nil, err
	}
	sh, err := l.show(items)
	if err != nil {
		return nil, err
	}
	some := only != nil
	if !some {
		l.shownAt.begin(sh.context)
	}
	out := make([]watchItem, len(items))
	var v V
	var scratch []byte
	for i, it := range items {
		k := watchKey(l.key(it))
		var version int64
		if sh.version != nil {
			version = sh.version(i)
		}
		object, sent := last[k]
		// Items read by id are few: each is shown, its version not kept.
		if some || !l.shownAt.unchanged(k, version) || !sent {
			if scratch, err = appendJSON(scratch[:0], sh.item(i, &v)); err != nil {
				return nil, err
			}
			if !sent || !bytes.Equal(object, scratch) {
				object = bytes.Clone(scratch)
			}
		}
		out[i] = watchItem{key: k, object: object}
	}
	if !some {
		l.shownAt.end(len(items))
		l.shown, l.at = out, nil
		return out, nil
	}
	if l.at == nil {
		l.at = make(map[string]int, len(l.shown))
		for i, it := range l.shown {
			l.at[it.key] = i
		}
	}
	// The list shown is the feed's too: changed in a copy. An item not in
	// it (created, renamed) came with a change that makes the next read
	// read all.
	merged := slices.Clone(l.shown)
	for _, it := range out {
		if i, ok := l.at[it.key]; ok {
			merged[i] = it
		}
	}
	l.shown = merged
	return merged, nil
}

// writeJSONArray answers n items as c.JSON would answer them as a list
// (under the object key field unless it is ""), item i as item(i, v)
// shows it, in or from v: a value each run reuses, so that showing
// thousands allocates a few. A long list is encoded in runs of encodeRun
// items, on as many cores as there are, into a few reused buffers written
// in order as they fill: encoding is most of a list of thousands, which
// is never held whole in memory a second time. item may be called from
// several goroutines at once, each with its own v.
func writeJSONArray[V any](c *gin.Context, field string, n int, item func(int, *V) any) {
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	w := bufio.NewWriterSize(c.Writer, 32<<10)
	if field != "" {
		name, _ := json.Marshal(field) // a string: cannot fail
		w.WriteByte('{')
		w.Write(name)
		w.WriteByte(':')
	}
	w.WriteByte('[')
	runs := (n + encodeRun - 1) / encodeRun
	if runs <= 1 {
		buf := encodeBuffers.Get().(*bytes.Buffer)
		buf.Reset()
		encodeItems(buf, 0, n, item)
		w.Write(buf.Bytes())
		encodeBuffers.Put(buf)
	} else {
		encodeRuns(w, runs, n, item)
	}
	w.WriteByte(']')
	if field != "" {
		w.WriteByte('}')
	}
	w.Flush() // a client gone meanwhile is not an error to answer
}

// encodeRun is how many items one run of writeJSONArray holds: about
// 700 KB of services.
const encodeRun = 1000

// encodeBuffers keeps the buffers lists were encoded into for the lists
// after them, until a collection: a list of thousands would otherwise
// allocate megabytes of buffers it grows again each time.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeRuns writes the runs of n items to w in order, encoded by up to
// GOMAXPROCS goroutines, each run into one of a few buffers that w's
// write frees. A panic of item's goes on in the caller's goroutine, as it
// would without them (gin recovers it there).
func encodeRuns[V any](w io.Writer, runs, n int, item func(int, *V) any) {
	type encoded struct {
		buf      *bytes.Buffer
		panicked any
	}
	workers := min(runtime.GOMAXPROCS(0), runs)
	free := make(chan *bytes.Buffer, workers+1)
	for range workers + 1 {
		free <- encodeBuffers.Get().(*bytes.Buffer)
	}
	done := make([]chan encoded, runs)
	for r := range done {
		done[r] = make(chan encoded, 1)
	}
	next := make(chan int, runs)
	for r := range runs {
		next <- r
	}
	close(next)
	for range workers {
		go func() {
			for {
				// A buffer first, then a run: the first run not yet
				// written is always one a worker holds a buffer for.
				buf := <-free
				r, ok := <-next
				if !ok {
					free <- buf
					return
				}
				buf.Reset()
				func() {
					defer func() { done[r] <- encoded{buf, recover()} }()
					encodeItems(buf, r*encodeRun, min(n, (r+1)*encodeRun), item)
				}()
			}
		}()
	}
	for r := range runs {
		e := <-done[r]
		if e.panicked != nil {
			go func() { // the other runs finish, into buffers freed here
				free <- e.buf
				for _, d := range done[r+1:] {
					free <- (<-d).buf
				}
			}()
			panic(e.panicked)
		}
		w.Write(e.buf.Bytes())
		free <- e.buf
	}
	for range workers + 1 { // every worker gives its last buffer back
		encodeBuffers.Put(<-free)
	}
}

// jsonAppender is a wire type that appends itself as json.Marshal
// encodes it, faster (wire.Service: most of a whole list's time was
// encoding/json's reflection over its fields).
type jsonAppender interface {
	AppendJSON([]byte) ([]byte, error)
}

// appendJSON appends x to b as json.Marshal encodes it: by x's own
// AppendJSON when it has one.
func appendJSON(b []byte, x any) ([]byte, error) {
	if a, ok := x.(jsonAppender); ok {
		return a.AppendJSON(b)
	}
	out, err := json.Marshal(x)
	return append(b, out...), err
}

// encodeItems appends items from to to (exclusive) to buf, comma-separated,
// with a comma first unless from is the first item.
func encodeItems[V any](buf *bytes.Buffer, from, to int, item func(int, *V) any) {
	var v V
	for i := from; i < to; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := appendJSON(buf.AvailableBuffer(), item(i, &v))
		if err != nil {
			panic(err) // wire types of strings, numbers and raw JSON
		}
		buf.Write(b)
	}
}
