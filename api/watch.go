package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
)

// Watches (?watch=true on a list route), as Kubernetes' watch: a
// long-lived answer of JSON lines, one event per change,
// {"type": "ADDED"|"MODIFIED"|"DELETED", "object": ...}. It starts with
// an ADDED event for every item and a BOOKMARK (object {}) after them, so
// a client that reconnects gets the whole current state again, knows
// when it has it (what it had and is not in it was deleted meanwhile),
// and loses nothing; it then reads the list
// again every Options.WatchInterval and sends what changed. The store keeps no
// change log, so the reading is the server's: a client never polls.

// DefaultWatchInterval is how often a watch reads its list again, unless
// Options.WatchInterval says otherwise.
const DefaultWatchInterval = time.Second

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

// watch streams the changes of the list read returns until the client
// goes. The write deadline (HTTP_WRITE_TIMEOUT) is lifted for this
// request only.
func (s *Server) watch(c *gin.Context, read func(*gin.Context) ([]watchItem, error)) {
	items, err := read(c)
	if err != nil {
		fail(c, err)
		return
	}
	rc := http.NewResponseController(c.Writer)
	rc.SetWriteDeadline(time.Time{})
	c.Header("Content-Type", "application/jsonl; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	var last map[string][]byte
	bookmark := true // after the first events: the initial state is sent
	interval := s.WatchInterval
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var events []watchEvent
		events, last = watchDiff(last, items)
		if bookmark {
			events, bookmark = append(events, watchEvent{"BOOKMARK", json.RawMessage("{}")}), false
		}
		for _, e := range events {
			line, _ := json.Marshal(e)
			if _, err := c.Writer.Write(append(line, '\n')); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-c.Request.Context().Done():
			return
		case <-tick.C:
		}
		if items, err = read(c); err != nil {
			// The stream has begun: a status can no longer say so. The
			// client reconnects and gets the state again.
			s.requestLogger(c).WarnContext(c.Request.Context(), "watch read failed", "error", err)
			return
		}
	}
}

// watchDiff compares items with the last objects sent, by key: the events
// to send (ADDED and MODIFIED in the list's order, then DELETED, with the
// object last sent, by key) and the objects now.
func watchDiff(last map[string][]byte, items []watchItem) ([]watchEvent, map[string][]byte) {
	now := make(map[string][]byte, len(items))
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
	return events, now
}
