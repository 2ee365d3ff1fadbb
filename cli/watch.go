package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// WatchEvent is one change a watch reports.
type WatchEvent struct {
	Type   string          `json:"type"` // ADDED, MODIFIED, DELETED
	Object json.RawMessage `json:"object"`
}

// watchReconnect is how long a watch waits before it reconnects after
// its stream ended.
const watchReconnect = time.Second

// Watch follows the list at path (?watch=true) until ctx ends, calling
// fn with each change, and with the first stream's BOOKMARK (the initial
// state is complete). A stream that ends is opened again: the server
// starts each with the whole state and a BOOKMARK, so Watch reports only
// what changed meanwhile (what is gone as DELETED) and nothing twice.
// key names an object of the list. An error answer, fn's error, or no
// answer to the first request ends the watch.
func (c *Client) Watch(ctx context.Context, path string, key func(json.RawMessage) string, fn func(WatchEvent) error) error {
	// A watch outlives any request timeout; ctx ends it.
	stream := *c
	stream.HTTP = &http.Client{Transport: c.httpClient().Transport}
	seen := map[string]json.RawMessage{}
	// fn's own errors end the watch; a stream's end does not.
	call := func(e WatchEvent) error {
		if err := fn(e); err != nil {
			return &fnError{err}
		}
		return nil
	}
	for first := true; ; first = false {
		err := stream.watchOnce(ctx, path+"?watch=true", key, seen, call)
		var ae *APIError
		var ee *ExitError
		var ue *UnreachableError
		var fe *fnError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &fe):
			return fe.err
		case errors.As(err, &ae), errors.As(err, &ee):
			return err
		case first && errors.As(err, &ue):
			// Never connected: a wrong --server, not a dropped stream.
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchReconnect):
		}
	}
}

// fnError is an error of Watch's fn.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// watchOnce reads one stream; seen is what the caller was told, by key.
func (c *Client) watchOnce(ctx context.Context, path string, key func(json.RawMessage) string, seen map[string]json.RawMessage, fn func(WatchEvent) error) error {
	resp, err := c.send(ctx, http.MethodGet, path, "", "application/jsonl", nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return c.apiError(resp.StatusCode, http.MethodGet, path, body)
	}
	initial := map[string]bool{} // keys of the stream's initial state, until its BOOKMARK
	first := len(seen) == 0      // the first stream: its BOOKMARK goes to fn
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	for lines.Scan() {
		var e WatchEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			return fmt.Errorf("watch %s: unexpected line: %v", path, err)
		}
		if e.Type == "ERROR" {
			// The server ended the stream (this client fell behind, say):
			// its reason is the user's to see, and the watch ends.
			var reason struct{ Name, Message string }
			json.Unmarshal(e.Object, &reason)
			return &ExitError{Code: ExitOther, Err: fmt.Errorf("the server ended the watch: %s (%s)", reason.Message, reason.Name)}
		}
		if e.Type == "BOOKMARK" {
			// What the caller knew and the server no longer has went
			// while the stream was down.
			for _, k := range slices.Sorted(maps.Keys(seen)) {
				if !initial[k] {
					if err := fn(WatchEvent{Type: "DELETED", Object: seen[k]}); err != nil {
						return err
					}
					delete(seen, k)
				}
			}
			initial = nil
			if first {
				if err := fn(e); err != nil {
					return err
				}
			}
			continue
		}
		k := key(e.Object)
		if initial != nil {
			initial[k] = true
		}
		if e.Type == "DELETED" {
			delete(seen, k)
		} else {
			if before, ok := seen[k]; ok && string(before) == string(e.Object) {
				continue // known already: sent again after a reconnect
			}
			if _, ok := seen[k]; ok {
				e.Type = "MODIFIED"
			}
			seen[k] = e.Object
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return lines.Err()
}

// watchKinds are how get -w follows each kind: its route, how an object
// is named, and how it is printed.
var watchKinds = map[string]struct {
	path  string
	key   func(json.RawMessage) string
	toDoc func([]byte) ([]byte, error)
}{
	"services":      {"/api/v3/services", func(r json.RawMessage) string { s, _ := decodeService(r); return s.Name }, serviceDocument},
	"agents":        {"/api/v3/agents", func(r json.RawMessage) string { a, _ := decodeAgent(r); return a.Name }, agentDocument},
	"microservices": {"/api/v3/microservices", func(r json.RawMessage) string { m, _ := decodeMicroservice(r); return m.Application + "/" + m.Name }, microserviceDocument},
}

// watchObjects is get -w: the kind's objects (those named, or all, or
// those -l selects) as they change, until ctx ends. The initial state is
// printed at the stream's BOOKMARK, ordered by --sort-by; later changes in
// the order they come. A service that stops matching -l is reported
// DELETED and one that starts matching ADDED, as kubectl's label-selected
// watch does. A table gets an EVENT column, and its change rows keep the
// initial table's columns.
func watchObjects(ctx context.Context, c *Client, w io.Writer, kind string, names []string, format string, tmpl *templateOutput, lo listOptions) error {
	k := watchKinds[kind]
	wide := format == "wide"
	header := kindHeader(kind, wide)
	if tmpl != nil && tmpl.columns != nil {
		header = tmpl.headers()
	}
	// The EVENT column is as wide as its widest value from the start.
	cols := &columns{w: w, header: tableHeader(lo.noHeaders, append([]string{"EVENT"}, header...)...), widths: []int{len("MODIFIED")}}
	var initial []WatchEvent // until the BOOKMARK
	live := false
	shown := map[string]bool{} // printed and still selected
	print := func(events ...WatchEvent) error {
		var rows [][]string
		for _, e := range events {
			name := k.key(e.Object)
			switch format {
			case "name":
				if _, err := fmt.Fprintf(w, "%s/%s\n", kindSingular[kind], name); err != nil {
					return err
				}
				continue
			case "json":
				doc, err := k.toDoc(e.Object)
				if err != nil {
					return err
				}
				line, err := json.Marshal(struct {
					Type   string          `json:"type"`
					Object json.RawMessage `json:"object"`
				}{e.Type, doc})
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
					return err
				}
				continue
			}
			var row []string
			var err error
			switch {
			case tmpl != nil && tmpl.jsonpath != nil:
				if err := tmpl.execute(w, e.Object); err != nil {
					return err
				}
				continue
			case tmpl != nil:
				row, err = tmpl.row(e.Object)
			default:
				row, err = kindRow(kind, e.Object, wide)
			}
			if err != nil {
				return err
			}
			rows = append(rows, append([]string{e.Type}, row...))
		}
		return cols.print(rows)
	}
	return c.Watch(ctx, k.path, k.key, func(e WatchEvent) error {
		if e.Type == "BOOKMARK" {
			live = true
			sorted, err := sortByField(initial, func(e WatchEvent) json.RawMessage { return e.Object }, lo.sortBy)
			if err != nil {
				return err
			}
			return print(sorted...)
		}
		name := k.key(e.Object)
		if len(names) > 0 && !slices.Contains(names, name) {
			return nil
		}
		if lo.tags != nil {
			s, err := decodeService(e.Object)
			if err != nil {
				return err
			}
			switch selected := len(selectServices([]Service{s}, lo.tags)) == 1; {
			case e.Type != "DELETED" && !selected && !shown[name]:
				return nil
			case e.Type != "DELETED" && !selected:
				e.Type = "DELETED" // it left the selection
			case e.Type == "DELETED" && !shown[name]:
				return nil
			case e.Type == "MODIFIED" && !shown[name]:
				e.Type = "ADDED" // it entered the selection
			}
		}
		if e.Type == "DELETED" {
			delete(shown, name)
		} else {
			shown[name] = true
		}
		if !live {
			initial = append(initial, e)
			return nil
		}
		return print(e)
	})
}

// columns prints a watch's table: the initial rows aligned as one table,
// then each later row padded to the same column widths (widened when a
// cell is wider), where a tabwriter would align each row only to itself.
// The header comes with the first row.
type columns struct {
	w      io.Writer
	header []string
	widths []int
	begun  bool
}

func (c *columns) print(rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	if !c.begun && len(c.header) > 0 {
		rows = append([][]string{c.header}, rows...)
	}
	c.begun = true
	for _, r := range rows {
		for i, cell := range r {
			r[i] = tableCell(cell)
			if i == len(c.widths) {
				c.widths = append(c.widths, 0)
			}
			c.widths[i] = max(c.widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", c.widths[i]-utf8.RuneCountInString(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(c.w, b.String())
	return err
}

// kindRow is the table row of one object of kind (get's and get -w's).
func kindRow(kind string, raw json.RawMessage, wide bool) ([]string, error) {
	now := time.Now()
	switch kind {
	case "services":
		s, err := decodeService(raw)
		return serviceRow(s, wide, now), err
	case "agents":
		a, err := decodeAgent(raw)
		return agentRow(a, wide, now), err
	}
	m, err := decodeMicroservice(raw)
	return microserviceRow(m, wide, now), err
}
