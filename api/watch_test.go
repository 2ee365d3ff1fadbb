package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"svcbridge/service"
	"svcbridge/store"
)

func TestWatchFeedSendsWhatChanged(t *testing.T) {
	items := func(kv ...string) []watchItem {
		var out []watchItem
		for i := 0; i < len(kv); i += 2 {
			out = append(out, watchItem{key: kv[i], object: json.RawMessage(strconv.Quote(kv[i+1]))})
		}
		return out
	}
	// show is a read's lines, each as its type and object.
	f := &watchFeed{}
	show := func(items []watchItem) string {
		var s []string
		for _, line := range strings.Split(strings.TrimSuffix(string(f.update(items)), "\n"), "\n") {
			var e watchEvent
			if line != "" && json.Unmarshal([]byte(line), &e) == nil {
				s = append(s, e.Type+" "+string(e.Object))
			}
		}
		return strings.Join(s, ", ")
	}
	for _, step := range []struct {
		read []watchItem
		want string
	}{
		{items("a", "1", "b", "2"), `ADDED "1", ADDED "2"`},
		{items("a", "1", "b", "2"), ``},
		{items("b", "3", "c", "4"), `MODIFIED "3", ADDED "4", DELETED "1"`},
		// The feed reuses its maps: a read is compared with the one
		// before it, not with one two reads back.
		{items("b", "3", "d", "5"), `ADDED "5", DELETED "4"`},
		{nil, `DELETED "3", DELETED "5"`},
		{items("a", "1"), `ADDED "1"`},
	} {
		if got := show(step.read); got != step.want {
			t.Errorf("after %v: %s, want %s", step.read, got, step.want)
		}
	}
}

// TestWatchVersionsTellUnchangedItems: an item shows as it did only when
// the read before had it at the same version in the same context.
func TestWatchVersionsTellUnchangedItems(t *testing.T) {
	type item struct {
		key     string
		version int64
	}
	var w watchVersions
	for i, read := range []struct {
		context uint64
		items   []item
		want    []bool
	}{
		{1, []item{{"a", 5}, {"b", 7}, {"c", 0}}, []bool{false, false, false}},
		{1, []item{{"a", 5}, {"b", 8}, {"c", 0}}, []bool{true, false, false}}, // b written; c has no version
		{2, []item{{"a", 5}, {"b", 8}}, []bool{false, false}},                 // names or note moved
		{2, []item{{"a", 5}, {"c", 3}}, []bool{true, false}},                  // b gone, c versioned
		{2, []item{{"b", 8}, {"c", 3}}, []bool{false, true}},                  // b back: not at the read before
		{2, []item{{"a", 5}, {"b", 8}, {"c", 3}}, []bool{false, true, true}},  // a skipped a read
	} {
		w.begin(read.context)
		for j, it := range read.items {
			if got := w.unchanged(it.key, it.version); got != read.want[j] {
				t.Errorf("read %d, item %s at %d: unchanged %v, want %v", i, it.key, it.version, got, read.want[j])
			}
		}
		w.end(len(read.items))
		if len(w.byKey) > len(read.items) {
			t.Errorf("read %d of %d items keeps %d versions", i, len(read.items), len(w.byKey))
		}
	}
}

// A watch streams a list's changes as JSON lines; it starts with the
// whole list, so a client that reconnects misses nothing.
func TestWatchStreamsTheChanges(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}).Want(201)
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "a", "type": "external", "resource": "203.0.113.1", "targetPort": 1}).Want(201)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	event := watchEvents(t, ctx, api, "/api/v3/services")
	next := func() string {
		t.Helper()
		var o struct {
			Name       string `json:"name"`
			TargetPort int    `json:"targetPort"`
		}
		typ := event(&o)
		return typ + " " + o.Name + " " + string(rune('0'+o.TargetPort))
	}
	if got := next(); got != "ADDED a 1" {
		t.Errorf("first event %q", got)
	}
	if got := next(); got != "BOOKMARK  0" {
		t.Errorf("after the initial state: %q", got)
	}
	api.JSON("POST", "/api/v3/services", map[string]any{"name": "b", "type": "external", "resource": "203.0.113.2", "targetPort": 2}).Want(201)
	if got := next(); got != "ADDED b 2" {
		t.Errorf("after a create: %q", got)
	}
	api.JSON("PATCH", "/api/v3/services/a", map[string]any{"targetPort": 3}).Want(204)
	if got := next(); got != "MODIFIED a 3" {
		t.Errorf("after an update: %q", got)
	}
	api.Do("DELETE", "/api/v3/services/b", nil).Want(204)
	if got := next(); got != "DELETED b 2" {
		t.Errorf("after a delete: %q", got)
	}
	// Watchers that join the open feed later, after the changes and then
	// after none, start from the list as it is now: the lines a list's
	// items make, byte for byte.
	var listed []json.RawMessage
	api.Do("GET", "/api/v3/services", nil).Want(200).Decode(&listed)
	want := `{"type":"ADDED","object":` + string(listed[0]) + "}\n" + `{"type":"BOOKMARK","object":{}}` + "\n"
	for _, when := range []string{"after the changes", "again"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", api.srv.URL+"/api/v3/services?watch=true", nil)
		late, err := api.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, len(want))
		_, err = io.ReadFull(late.Body, first)
		late.Body.Close()
		if err != nil || string(first) != want {
			t.Errorf("a watcher joining %s read %q (%v), want %q", when, first, err, want)
		}
	}
	api.Do("GET", "/api/v3/agents?watch=maybe", nil).WantError(400, "ValidationError", "Query parameter 'watch' must be true or false")
}

// TestWatchersShareNoFilter: watches of one list with different filters
// each get their own items; the first watcher's ?application= is not
// what a later one gets.
func TestWatchersShareNoFilter(t *testing.T) {
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
	api.JSON("POST", "/api/v3/agents", map[string]any{"name": "fog-a"}).Want(201)
	for _, m := range []string{"orders/checkout", "billing/invoice"} {
		app, name, _ := strings.Cut(m, "/")
		api.JSON("POST", "/api/v3/microservices", map[string]any{"application": app, "name": name, "agent": "fog-a"}).Want(201)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	firstNames := func(query string) []string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", api.srv.URL+"/api/v3/microservices?watch=true"+query, nil)
		resp, err := api.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		lines := bufio.NewScanner(resp.Body)
		var names []string
		for lines.Scan() {
			var e struct {
				Type   string `json:"type"`
				Object struct {
					Application string `json:"application"`
					Name        string `json:"name"`
				} `json:"object"`
			}
			if err := json.Unmarshal(lines.Bytes(), &e); err != nil || e.Type == "BOOKMARK" {
				break
			}
			names = append(names, e.Object.Application+"/"+e.Object.Name)
		}
		return names
	}
	// The first watch stays open while the others join.
	if got := firstNames("&application=orders"); !slices.Equal(got, []string{"orders/checkout"}) {
		t.Errorf("watch of orders: %v", got)
	}
	if got := firstNames("&application=billing"); !slices.Equal(got, []string{"billing/invoice"}) {
		t.Errorf("watch of billing, beside one of orders: %v", got)
	}
	if got := firstNames(""); !slices.Equal(got, []string{"billing/invoice", "orders/checkout"}) {
		t.Errorf("watch of all, beside the filtered ones: %v", got)
	}
}

// TestWatchShowsWhatAServiceDoesNotStore: a watch of the services sends
// a service again when anything it shows changes, though the watch does
// not encode again the services whose rows and referred names did not
// move: a pass's outcome, an edit, and the rename of the agent it runs on
// (the service's row untouched) are each one MODIFIED, and nothing comes
// in between.
func TestWatchShowsWhatAServiceDoesNotStore(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		api, st, _ := newTestAPI(t, dialect, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
		createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
		createAgent(t, api, map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}})
		createService(t, api, map[string]any{"name": "ssh", "type": "agent", "resource": "fog-a", "targetPort": 22})
		createService(t, api, map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 443})

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		event := watchEvents(t, ctx, api, servicesPath)
		next := func() string {
			t.Helper()
			var o struct {
				Name               string `json:"name"`
				ResourceName       string `json:"resourceName"`
				TargetPort         int    `json:"targetPort"`
				ProvisioningStatus string `json:"provisioningStatus"`
			}
			typ := event(&o)
			return strings.Join([]string{typ, o.Name, o.ResourceName, strconv.Itoa(o.TargetPort), o.ProvisioningStatus}, " ")
		}
		for _, want := range []string{"ADDED ssh fog-a 22 pending", "ADDED web 203.0.113.10 443 pending", "BOOKMARK   0 "} {
			if got := next(); got != want {
				t.Fatalf("initial state: %q, want %q", got, want)
			}
		}
		time.Sleep(100 * time.Millisecond) // reads with nothing changed
		for _, step := range []struct {
			what   string
			change func()
			want   string
		}{
			{"a pass's outcome", func() {
				err := st.InTx(context.Background(), func(tx *store.Tx) error {
					_, err := tx.SetServiceStatus(context.Background(), "web", store.PassResult{Generation: 1, Status: service.StatusReady})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}, "MODIFIED web 203.0.113.10 443 ready"},
			{"an edit", func() {
				api.JSON("PATCH", servicesPath+"/web", map[string]any{"targetPort": 8443}).Want(204)
			}, "MODIFIED web 203.0.113.10 8443 pending"},
			{"the rename of its agent", func() {
				api.JSON("PATCH", "/api/v3/agents/fog-a", map[string]any{"name": "fog-b"}).Want(200)
			}, "MODIFIED ssh fog-b 22 pending"},
		} {
			step.change()
			if got := next(); got != step.want {
				t.Errorf("after %s: %q, want %q", step.what, got, step.want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// watchEvents opens a watch of the list at path until ctx ends, and
// returns its events in turn: each one's type, its object decoded into
// object.
func watchEvents(t *testing.T, ctx context.Context, api *testAPI, path string) func(object any) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", api.srv.URL+path+"?watch=true", nil)
	resp, err := api.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/jsonl; charset=utf-8" {
		t.Fatalf("watch answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	return func(object any) string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the watch ended: %v", lines.Err())
		}
		var e struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil || json.Unmarshal(e.Object, object) != nil {
			t.Fatalf("line %s: %v", lines.Bytes(), err)
		}
		return e.Type
	}
}

// TestIdleWatchesReadNothing: a watch reads its list again only after
// something it shows changed, on any replica. With nothing changing it
// does not touch the database (a read would wait behind a lock on the
// list's table), and a change through another replica comes as an event:
// an agent's router report, a service's create; a waiting service's note
// on workers, from Temporal, does not make it read while the note stays.
func TestIdleWatchesReadNothing(t *testing.T) {
	const interval = 20 * time.Millisecond
	replicas, worker := newReplicas(t, 2, func(o *Options) { o.WatchInterval = interval })
	watching, writing := replicas[0], replicas[1]
	createAgent(t, writing.api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	fog := createAgent(t, writing.api, map[string]any{"name": "fog-a", "routerMode": "edge", "upstreamRouters": []string{"hub"}})
	createService(t, writing.api, map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
	err := worker.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.SetServiceStatus(context.Background(), "web", store.PassResult{Generation: 1, Status: service.StatusReady})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// reads counts the watching replica's statements that wait for a lock
	// on table while it is held 50 intervals.
	reads := func(table string) int {
		tx, err := watching.admin.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`LOCK TABLE ` + table + ` IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * interval)
		var n int
		err = watching.admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			watching.name).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, list := range []struct {
		path, table string
		change      func()
		want        string // the change's event, its type and the item's name and what it shows
	}{
		{"/api/v3/agents", "agents", func() {
			writing.api.JSON("PUT", "/api/v3/agent/router/status", map[string]any{"version": `"1"`, "error": "connection refused"}, bearer(fog.Token)...).Want(204)
		}, "MODIFIED fog-a router connection refused"},
		{"/api/v3/services", "services", func() {
			createService(t, writing.api, map[string]any{"name": "api", "type": "external", "resource": "203.0.113.11", "targetPort": 443})
		}, "ADDED api pending"},
	} {
		t.Run(list.table, func(t *testing.T) {
			event := watchEvents(t, ctx, watching.api, list.path)
			var item struct {
				Name               string `json:"name"`
				ProvisioningStatus string `json:"provisioningStatus"`
				Router             *struct {
					Error string `json:"error"`
				} `json:"router"`
			}
			for typ := ""; typ != "BOOKMARK"; {
				typ = event(&item)
			}
			// still fails when each of 5 windows saw the watching replica
			// read the list: one may see a read (a heartbeat late on a busy
			// machine makes the feed read until it is current again).
			still := func(when string) {
				for window := 1; reads(list.table) > 0; window++ {
					t.Logf("%s: window %d saw reads wait", when, window)
					time.Sleep(5 * interval) // for the read that waited
					if window == 5 {
						t.Fatalf("%s: in each of %d windows of %s the watching replica read the %s, though none changed", when, window, 50*interval, list.table)
					}
				}
			}
			// The replica's first watch starts its change feed, which reads
			// the list until it is current: a window or two.
			still("before the change")
			list.change()
			typ := event(&item)
			shows := item.ProvisioningStatus
			if item.Router != nil {
				shows = "router " + item.Router.Error
			}
			if got := strings.Join([]string{typ, item.Name, shows}, " "); got != list.want {
				t.Errorf("after a change on another replica: %q, want %q", got, list.want)
			}
			// For the services, while api waits for its pass with its note
			// on workers unchanged.
			still("after the change")
		})
	}
}

// TestAgentsWatchReadsWhatChanged: while the fleet changes (a router's
// report, on another replica), the agents' watch reads only the agents
// that changed, not the whole fleet; an agent written (edited) may change
// how others show, and the whole list is read. An agent's host set behind
// svcbridge's back shows which reads read it.
func TestAgentsWatchReadsWhatChanged(t *testing.T) {
	replicas, _ := newReplicas(t, 2, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
	watching, writing := replicas[0], replicas[1]
	createAgent(t, writing.api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	fogA := createAgent(t, writing.api, map[string]any{"name": "fog-a", "routerMode": "edge"})
	createAgent(t, writing.api, map[string]any{"name": "fog-b", "routerMode": "edge"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	event := watchEvents(t, ctx, watching.api, "/api/v3/agents")
	var item struct {
		Name   string   `json:"name"`
		Host   string   `json:"host"`
		Tags   []string `json:"tags"`
		Router *struct {
			Error string `json:"error"`
		} `json:"router"`
	}
	next := func() string {
		item.Router, item.Tags = nil, nil
		typ := event(&item)
		shows := item.Host
		if item.Router != nil {
			shows += " router " + item.Router.Error
		}
		return strings.Join(append([]string{typ, item.Name, shows}, item.Tags...), " ")
	}
	for typ := ""; typ != "BOOKMARK"; {
		typ = event(&item)
	}
	// The watch started the replica's change feed: until it is current,
	// the feed reads the whole list.
	within(t, 10*time.Second, "the watching replica's change feed current", func() error {
		if !watching.store.FeedCurrent() {
			return errors.New("not current")
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the feed's last whole read
	if _, err := watching.admin.Exec(`UPDATE agents SET host = 'sneaky.example.com' WHERE name = 'fog-b'`); err != nil {
		t.Fatal(err)
	}
	report := func(reason string) {
		writing.api.JSON("PUT", "/api/v3/agent/router/status", map[string]any{"version": `"1"`, "error": reason}, bearer(fogA.Token)...).Want(204)
	}
	report("connection refused")
	if got := next(); got != "MODIFIED fog-a  router connection refused" {
		t.Fatalf("after fog-a's report: %q", got)
	}
	// A service touches no agent: nothing to read. fog-a's next report is
	// the next event: fog-b, unchanged as far as svcbridge knows, is not
	// read again.
	createService(t, writing.api, map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 443})
	time.Sleep(200 * time.Millisecond)
	report("timed out")
	if got := next(); got != "MODIFIED fog-a  router timed out" {
		t.Errorf("after fog-a's next report: %q, want fog-a's report alone", got)
	}
	writing.api.JSON("PATCH", "/api/v3/agents/fog-a", map[string]any{"tags": []string{"east"}}).Want(200)
	for _, want := range []string{"MODIFIED fog-a  router timed out east", "MODIFIED fog-b sneaky.example.com"} {
		if got := next(); got != want {
			t.Errorf("after fog-a was edited: %q, want %q", got, want)
		}
	}
}

// TestWatchFollowsTheNoteOnWorkers: while a service waits, a watch of the
// services reads them every interval, as its note that no worker polls
// comes from Temporal, not from a change of the store.
func TestWatchFollowsTheNoteOnWorkers(t *testing.T) {
	var pollers atomic.Int64
	api, _, _ := newTestAPI(t, store.SQLite, func(o *Options) {
		o.WatchInterval = 20 * time.Millisecond
		o.Pollers = func(context.Context) (int, error) { return int(pollers.Load()), nil }
	})
	createAgent(t, api, map[string]any{"name": "hub", "host": "hub.example.com", "routerMode": "interior", "defaultRouter": true})
	api.JSON("POST", servicesPath, map[string]any{"name": "web", "type": "external", "resource": "203.0.113.10", "targetPort": 443}).Want(201)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	event := watchEvents(t, ctx, api, servicesPath)
	var svc struct {
		Name                string `json:"name"`
		ProvisioningMessage string `json:"provisioningMessage"`
	}
	if typ := event(&svc); typ != "ADDED" || !strings.Contains(svc.ProvisioningMessage, "no worker") {
		t.Fatalf("initial state: %s %+v, want the note that no worker polls", typ, svc)
	}
	event(&svc) // BOOKMARK
	pollers.Store(1)
	svc.ProvisioningMessage = "" // absent when there is none
	if typ := event(&svc); typ != "MODIFIED" || svc.Name != "web" || svc.ProvisioningMessage != "" {
		t.Errorf("once a worker polls: %s %+v, want web without the note", typ, svc)
	}
}

// TestWatchFeedReadsAfterAChange: a feed reads its list again when its
// change count moved, while the count cannot be relied on, and once a
// minute however still it is; a list that can read some items by id reads
// only those that changed since its last read, and nothing when the
// change was to none of them.
func TestWatchFeedReadsAfterAChange(t *testing.T) {
	count, current := uint64(7), true
	// moved: what each count touched (nil: all of the list).
	moved := map[uint64][]string{}
	since := func(c uint64) ([]string, bool) {
		var ids []string
		for n := c + 1; n <= count; n++ {
			if moved[n] == nil {
				return nil, true
			}
			ids = append(ids, moved[n]...)
		}
		return ids, false
	}
	all := []string{"(all)"}
	for _, some := range []bool{false, true} {
		f := &watchFeed{changes: listChanges{count: func() (uint64, bool) { return count, current }}, seen: count, readAt: time.Now()}
		if some {
			f.changes.since = since
		}
		move := func(ids ...string) func() {
			return func() { count++; moved[count] = append([]string{}, ids...) }
		}
		moveAll := func() { count++; moved[count] = nil }
		for _, step := range []struct {
			what      string
			move      func()
			reads     []string // nil: none
			readsSome []string // with since
		}{
			{"nothing changed", func() {}, nil, nil},
			{"the count moved for a", move("a"), all, []string{"a"}},
			{"nothing changed since", func() {}, nil, nil},
			{"the count moved for b, then c", func() { move("b")(); move("c")() }, all, []string{"b", "c"}},
			{"the count moved for none of the items", move(), all, nil},
			{"the count moved for all", moveAll, all, all},
			{"the count cannot be relied on", func() { current = false }, all, all},
			{"and still cannot", func() {}, all, all},
			{"it can again", func() { current = true }, nil, nil},
			{"a minute went by", func() { f.readAt = time.Now().Add(-watchRereadAfter) }, all, all},
			{"and then nothing", func() {}, nil, nil},
			{"more than a feed reads by id", func() { move(make([]string, watchReadSome+1)...)() }, all, all},
			{"a minute after the last whole read, one more", func() { f.readAt = time.Now().Add(-watchRereadAfter); move("d")() }, all, all},
		} {
			step.move()
			want := step.reads
			if some {
				want = step.readsSome
			}
			var got []string
			switch skip, only := f.next(); {
			case skip:
			case only == nil:
				got = all
			default:
				got = only
			}
			if !slices.Equal(got, want) {
				t.Errorf("since %v: %s: reads %v, want %v", some, step.what, got, want)
			}
		}
	}
}
