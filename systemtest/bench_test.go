package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"svcbridge/bench"
	"svcbridge/devserver"
	"svcbridge/service"
	"svcbridge/store"
)

// newDevSystem is what `svcbridge dev` runs: an embedded Temporal server on
// a WAL SQLite file, the embedded SQLite store, one worker, the API.
func newDevSystem(b *testing.B) *system {
	s, _ := startDevSystem(b, -1)
	return s
}

// startDevSystem is newDevSystem with the Web UI on uiPort (0: a free
// port, -1: none), as `svcbridge dev` runs it; it also returns the server.
func startDevSystem(t testing.TB, uiPort int) (*system, *devserver.Server) {
	t.Helper()
	dir := t.TempDir()
	ts, err := devserver.Start(context.Background(), devserver.Options{DataDir: dir, UIPort: uiPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Stop() })
	st, err := store.Open(context.Background(), filepath.Join(dir, "svcbridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &system{t: t, store: st, plane: service.ControlPlaneRemote, tags: service.TagRule{Prefix: "service.iofog.org/tag"},
		queue: taskQueue, ids: processIDs}
	s.temporal = temporalClient(t, ts.FrontendAddress(), ts.Namespace())
	s.wf = s.installation().Workflows(s.temporal)
	s.startWorker()
	s.serveAPI()
	s.agent(map[string]any{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"})
	return s, ts
}

// createAndWait creates an external service and returns how long it took
// to be ready, as a client waiting for it sees it: with long polls (GET
// with If-None-Match and timeoutSeconds), answered as the service changes.
func (s *system) createAndWait(name string) (time.Duration, error) {
	start := time.Now()
	code, body := s.do("POST", "/api/v3/services", map[string]any{
		"name": name, "type": "external", "resource": "203.0.113.10", "targetPort": 443})
	if code != http.StatusCreated {
		return 0, fmt.Errorf("create %s: %d %s", name, code, body)
	}
	etag := ""
	for time.Since(start) < time.Minute {
		req, err := http.NewRequest("GET", s.url+"/api/v3/services/"+name+"?timeoutSeconds=60", nil)
		if err != nil {
			return 0, err
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := adminClient.Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode == http.StatusNotModified {
			continue
		}
		var svc serviceOut
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &svc) != nil {
			return 0, fmt.Errorf("GET service %s: %d %s", name, resp.StatusCode, body)
		}
		if svc.ProvisioningStatus == service.StatusReady {
			return time.Since(start), nil
		}
		etag = resp.Header.Get("ETag")
	}
	return 0, fmt.Errorf("%s not ready within a minute", name)
}

// BenchmarkCreateToReady: one service at a time; target p50 < 100 ms.
func BenchmarkCreateToReady(b *testing.B) {
	s := newDevSystem(b)
	var lat bench.Latencies
	b.ResetTimer()
	for i := range b.N {
		d, err := s.createAndWait(fmt.Sprintf("seq-%05d", i))
		if err != nil {
			b.Fatal(err)
		}
		lat.Add(d, nil)
	}
	b.ReportMetric(lat.Percentile(0.50), "p50-ms")
	b.ReportMetric(lat.Percentile(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkConcurrentCreates: 500 services by 50 clients until all are
// ready; target within 10 s.
func BenchmarkConcurrentCreates(b *testing.B) {
	const services, clients = 500, 50
	for range b.N {
		b.StopTimer()
		s := newDevSystem(b)
		b.StartTimer()
		start := time.Now()
		var lat bench.Latencies
		var wg sync.WaitGroup
		errs := make(chan error, services)
		next := make(chan int, services)
		for i := range services {
			next <- i
		}
		close(next)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					d, err := s.createAndWait(fmt.Sprintf("par-%05d", i))
					if err != nil {
						errs <- err
						return
					}
					lat.Add(d, nil)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		total := time.Since(start)
		b.ReportMetric(total.Seconds(), "s-all-ready")
		b.ReportMetric(float64(services)/total.Seconds(), "services/s")
		b.ReportMetric(lat.Percentile(0.50), "p50-ms")
		b.ReportMetric(lat.Percentile(0.99), "p99-ms")
		b.ReportMetric(0, "ns/op")
	}
}
