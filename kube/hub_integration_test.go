package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"svcbridge/routerconfig"
)

// A pair a human added by hand; it must survive every rewrite.
const humanPair = `["tcpListener", {"name": "debug", "port": "9999", "address": "debug", "note": "added by hand <ops>"}]`

// Seed 000's hub objects.
var (
	seedListener  = routerconfig.Listener{Name: "checkout-listener", Port: "10024", Address: "checkout"}
	seedConnector = routerconfig.Connector{Name: "checkout-connector", Host: "payments.payments.svc.cluster.local",
		Port: "8080", Address: "checkout", ProcessID: "payments.payments.svc.cluster.local-k8s-8080"}
)

func newHub(t *testing.T, cs kubernetes.Interface, cfg Config, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(cfg.Namespace).Create(testCtx(t), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: HubConfigMapName}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func getHub(t *testing.T, cs kubernetes.Interface, cfg Config) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(cfg.Namespace).Get(testCtx(t), HubConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func upsertEdit(listeners []routerconfig.Listener, connectors []routerconfig.Connector) func([]byte) ([]byte, error) {
	return func(raw []byte) ([]byte, error) { return routerconfig.UpsertPairs(raw, listeners, connectors) }
}

// 20 writers at once, each adding its own listener: compare-and-swap on the
// ConfigMap's resourceVersion loses none and duplicates none.
func TestUpdateHubConcurrentUpserts(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	newHub(t, cs, cfg, map[string]string{HubConfigKey: "[\n" + humanPair + "\n]", "other-key": "kept"})

	const writers = 20
	var edits atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			l := routerconfig.Listener{Name: fmt.Sprintf("svc%02d-listener", i), Port: fmt.Sprint(10024 + i), Address: fmt.Sprintf("svc%02d", i)}
			errs <- UpdateHub(ctx, cs, cfg, func(raw []byte) ([]byte, error) {
				edits.Add(1)
				return routerconfig.UpsertPairs(raw, []routerconfig.Listener{l}, nil)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d writers needed %d edits (%d retried after a conflict)", writers, edits.Load(), int(edits.Load())-writers)

	cm := getHub(t, cs, cfg)
	entries, err := routerconfig.HubEntries([]byte(cm.Data[HubConfigKey]))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != writers+1 {
		t.Errorf("%d pairs, want %d:\n%s", len(entries), writers+1, cm.Data[HubConfigKey])
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Kind+"/"+e.Name]++
	}
	for i := range writers {
		if n := seen[fmt.Sprintf("tcpListener/svc%02d-listener", i)]; n != 1 {
			t.Errorf("svc%02d-listener appears %d times", i, n)
		}
	}
	if entries[0].Name != "debug" || !routerconfig.SameHub(entries[0].Object, []byte(`{"name":"debug","port":"9999","address":"debug","note":"added by hand <ops>"}`)) {
		t.Errorf("the hand-added pair changed: %s", entries[0].Object)
	}
	if cm.Data["other-key"] != "kept" {
		t.Errorf("other ConfigMap keys: %v", cm.Data)
	}
}

func TestUpdateHub(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	ctx := testCtx(t)
	newHub(t, cs, cfg, map[string]string{HubConfigKey: "[" + humanPair + "]"})

	// The seed's objects, upserted.
	if err := UpdateHub(ctx, cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, []routerconfig.Connector{seedConnector})); err != nil {
		t.Fatal(err)
	}
	cm := getHub(t, cs, cfg)
	want := `[["tcpListener",{"name":"debug","port":"9999","address":"debug","note":"added by hand <ops>"}],` +
		`["tcpListener",{"name":"checkout-listener","port":"10024","address":"checkout"}],` +
		`["tcpConnector",{"name":"checkout-connector","host":"payments.payments.svc.cluster.local","port":"8080","address":"checkout","processId":"payments.payments.svc.cluster.local-k8s-8080"}]]`
	if got := cm.Data[HubConfigKey]; !routerconfig.SameHub([]byte(got), []byte(want)) {
		t.Errorf("hub = %s\nwant  %s", got, want)
	}

	// The same again writes nothing.
	if err := UpdateHub(ctx, cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, nil)); err != nil {
		t.Fatal(err)
	}
	if again := getHub(t, cs, cfg); again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("an unchanged hub was written: resourceVersion %s -> %s", cm.ResourceVersion, again.ResourceVersion)
	}

	// Removal: the service's pairs go, the hand-added one stays.
	err := UpdateHub(ctx, cs, cfg, func(raw []byte) ([]byte, error) {
		out, err := routerconfig.RemovePairs(raw, routerconfig.PairListener, []string{"checkout-listener"})
		if err != nil {
			return nil, err
		}
		return routerconfig.RemovePairs(out, routerconfig.PairConnector, []string{"checkout-connector"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := getHub(t, cs, cfg).Data[HubConfigKey]; !routerconfig.SameHub([]byte(got), []byte("["+humanPair+"]")) {
		t.Errorf("after removal: %s", got)
	}

	// An edit's error stops the update and is returned as it is.
	boom := errors.New("boom")
	if err := UpdateHub(ctx, cs, cfg, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("edit error = %v", err)
	}
}

// A ConfigMap without the key (or without data) gets it.
func TestUpdateHubMissingKey(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	newHub(t, cs, cfg, nil)
	if err := UpdateHub(testCtx(t), cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, nil)); err != nil {
		t.Fatal(err)
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal([]byte(getHub(t, cs, cfg).Data[HubConfigKey]), &pairs); err != nil || len(pairs) != 1 {
		t.Errorf("hub = %q (%v)", getHub(t, cs, cfg).Data[HubConfigKey], err)
	}
}

func TestUpdateHubNoConfigMap(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	err := UpdateHub(testCtx(t), cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, nil))
	var missing *NoHubConfigMapError
	if !errors.As(err, &missing) {
		t.Fatalf("UpdateHub without the ConfigMap = %v, want *NoHubConfigMapError", err)
	}
	want := "ConfigMap iofog-router not found in namespace " + cfg.Namespace + ": the hub router's config must exist"
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	if _, err := cs.CoreV1().ConfigMaps(cfg.Namespace).Get(context.Background(), HubConfigMapName, metav1.GetOptions{}); err == nil {
		t.Error("UpdateHub created the ConfigMap")
	}
}

// A hub file that is not JSON is never overwritten.
func TestUpdateHubInvalidFile(t *testing.T) {
	cs := needKube(t)
	cfg := newNamespace(t, cs)
	before := newHub(t, cs, cfg, map[string]string{HubConfigKey: "{not json"})
	if err := UpdateHub(testCtx(t), cs, cfg, upsertEdit([]routerconfig.Listener{seedListener}, nil)); err == nil {
		t.Fatal("UpdateHub rewrote an invalid file")
	}
	if after := getHub(t, cs, cfg); after.ResourceVersion != before.ResourceVersion {
		t.Error("the invalid file was written")
	}
}
