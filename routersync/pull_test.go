package routersync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"svcbridge/api"
	"svcbridge/auth"
	"svcbridge/routersync"
	"svcbridge/service"
	"svcbridge/store"
	"svcbridge/store/storetest"
	"svcbridge/wire"
)

// idle is a Reconciler with nothing to reconcile: the test writes the
// agent's router itself.
type idle struct{}

func (idle) ServiceCreated(context.Context, string) error  { return nil }
func (idle) ServiceChanged(context.Context, string) error  { return nil }
func (idle) AgentsQueued(context.Context, ...string) error { return nil }

// TestPullAcknowledgesAChangeBetweenItsReads: a change committed after the
// router side read the agent's change sequence and before it read the
// document comes with the document, and the sequence it reports does not
// cover it; the next Wait answers at once (not after a long poll that no
// change ends) with the sequence that does, so the change is acknowledged.
func TestPullAcknowledgesAChangeBetweenItsReads(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, store.SQLite)
	admin, err := auth.NewStatic(auth.StaticToken{Name: "admin", Role: string(auth.Admin), Token: "routersync-test-admin-token"})
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(api.Options{Store: st, Reconciler: idle{}, ControlPlane: service.ControlPlaneRemote, Auth: admin,
		BridgePorts: store.PortRange{First: 10024, Last: 10099}, BridgePortsRaw: "10024-10099",
		Tags: service.TagRule{Prefix: service.DefaultTagPrefix}})
	var fog struct {
		UUID  string `json:"uuid"`
		Token string `json:"token"`
	}
	for _, body := range []string{
		`{"name":"hub","host":"hub.example.com","routerMode":"interior","defaultRouter":true}`,
		`{"name":"fog","routerMode":"edge"}`,
	} {
		req := httptest.NewRequest(http.MethodPost, "/api/v3/agents", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer routersync-test-admin-token")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("create agent %s: %d %s", body, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &fog); err != nil {
			t.Fatal(err)
		}
	}
	change := func(n int) {
		t.Helper()
		base := []byte(`{"bridges":{"tcpConnectors":{},"tcpListeners":{}},"change":` + strconv.Itoa(n) + `}`)
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			return tx.WriteRouter(ctx, fog.UUID, store.RouterWrite{Base: base})
		}); err != nil {
			t.Fatal(err)
		}
	}
	// between: a change to commit once the next sequence read is answered.
	var between atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method == http.MethodGet && r.URL.Path == "/api/v3/agent/config/changes" {
			if n := between.Swap(0); n != 0 {
				change(int(n))
			}
		}
	}))
	t.Cleanup(srv.Close)
	pull := &routersync.Pull{Server: srv.URL, Token: fog.Token, Client: srv.Client(), LongPoll: time.Minute}
	changes := func() store.Changes {
		t.Helper()
		var ch store.Changes
		if err := st.Read(ctx, func(tx *store.Tx) (err error) { ch, err = tx.AgentChanges(ctx, fog.UUID); return err }); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	seq := func() int64 { return changes().LastUpdated }

	d, err := pull.Wait(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	change(1)
	between.Store(2)
	d, err = pull.Wait(ctx, d.Version)
	if err != nil {
		t.Fatal(err)
	}
	if d.Seq >= seq() {
		t.Fatalf("the change between the reads: sequence %d of %d; the test means one behind", d.Seq, seq())
	}
	version, entities := d.Version, d.Entities

	waited, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err = pull.Wait(waited, version)
	if err != nil {
		t.Fatalf("the next Wait, with the sequence behind its document: %v", err)
	}
	if d.Version != version || d.Seq != seq() || !reflect.DeepEqual(d.Entities, entities) {
		t.Errorf("the next Wait: version %s sequence %d (%v), want %s at %d (%v)", d.Version, d.Seq, d.Entities, version, seq(), entities)
	}
	if err := pull.Report(ctx, routersync.Report{Version: d.Version, LastUpdated: &d.Seq, Failed: []wire.FailedBridge{}}); err != nil {
		t.Fatal(err)
	}
	if ch := changes(); ch.MicroserviceConfig || ch.Acknowledged != ch.LastUpdated {
		t.Errorf("after the report: %+v, want every change acknowledged", ch)
	}
	// Now current, the Wait after waits for a change.
	done := make(chan error, 1)
	go func() {
		_, err := pull.Wait(waited, version)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a Wait with nothing changed answered: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	change(3)
	if err := <-done; err != nil {
		t.Errorf("a Wait for a change: %v", err)
	}
}
