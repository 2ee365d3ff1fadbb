package systemtest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"svcbridge/kube/kubetest"
	"svcbridge/service"
	"svcbridge/worker"
)

// TestKubernetesOutageRecovery stops the real kube-apiserver while services
// change and are created, so every one fails, for long enough that each
// service's backoff has grown past 15 s; once the apiserver is back, the
// worker's dependency watcher retries them all at once.
func TestKubernetesOutageRecovery(t *testing.T) {
	s, cs, _ := kubeSystem(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go worker.Watch(ctx, s.store, s.wf, worker.WatchInterval,
		[]worker.Probe{worker.StoreProbe(s.store), worker.KubeProbe(cs)}, slog.New(slog.DiscardHandler))
	s.agent(map[string]any{"name": "fog-a", "routerMode": "edge"})

	const n = 12
	name := func(i int) string { return fmt.Sprintf("ssh-%02d", i) }
	create := func(i int) {
		s.must(http.StatusCreated, "POST", "/api/v3/services", map[string]any{"name": name(i), "type": "agent",
			"resource": "fog-a", "targetPort": 2200 + i, "servicePort": 22, "k8sType": "ClusterIP"}, nil)
	}
	for i := range n / 2 {
		create(i)
	}
	for i := range n / 2 {
		s.waitStatus(name(i), service.StatusReady)
	}

	// The outage: every write is accepted, and every reconcile fails.
	// Backoffs of 2, 4, 8 and 16 s pass within it, so without the watcher
	// a service would next retry 32 s after its last failure.
	const outage = 40 * time.Second
	kubetest.StopAPIServer(t)
	down := time.Now()
	for i := range n / 2 {
		s.must(http.StatusNoContent, "PATCH", "/api/v3/services/"+name(i), map[string]any{"targetPort": 3200 + i}, nil)
	}
	for i := n / 2; i < n; i++ {
		create(i)
	}
	for i := range n {
		s.waitStatus(name(i), service.StatusFailed)
	}
	time.Sleep(outage - time.Since(down))
	kubetest.StartAPIServer(t)
	back := time.Now()
	t.Logf("kube-apiserver was down for %s", back.Sub(down).Round(time.Second))

	s.waitAllReady("every service ready within 15 s of the kube-apiserver's return", n, time.Until(back.Add(15*time.Second)))
	t.Logf("all %d services ready %s after the kube-apiserver's return", n, time.Since(back).Round(100*time.Millisecond))
}
