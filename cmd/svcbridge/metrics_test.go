package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads url's /metrics as Prometheus would: each series' value (a
// histogram's count), by name{label="value",...} in label name order.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// callAPI sends body (nil: none) as JSON to the API at url with token,
// and returns the answer's status and body.
func callAPI(t *testing.T, url, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url+path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// TestMetricsFromTheStart runs `svcbridge dev` in this process (the API,
// a worker, the embedded Temporal server, SQLite) and scrapes /metrics as
// Prometheus would: before anything happened every svcbridge series is
// there at zero, and a create moves them. (This package's only test that
// runs a worker: the counters are this server's.)
func TestMetricsFromTheStart(t *testing.T) {
	cfg := devConfig(t, "--data-dir", t.TempDir(), "--temporal-port", "0", "--database-url", "", "--log-level", "warn")
	ctx, cancel := context.WithCancel(context.Background())
	d, err := startDev(ctx, cfg, "127.0.0.1:0", -1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		d.close()
	})
	url := "http://" + d.ln.Addr().String()
	call := func(method, path string, body any) (int, []byte) {
		t.Helper()
		return callAPI(t, url, d.token, method, path, body)
	}
	waitFor := func(what string, cond func(map[string]float64) bool) map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			m := scrape(t, url)
			if cond(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60 s; /metrics has %v", what, m)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	start := scrape(t, url)
	zero := []string{
		`svcbridge_service_reconciles_total{outcome="ready"}`,
		`svcbridge_service_reconciles_total{outcome="failed"}`,
		`svcbridge_service_ready_seconds`,
		`svcbridge_router_config_writes_total{router="agent"}`,
		`svcbridge_router_config_writes_total{router="hub-configmap"}`,
		`svcbridge_drift_repairs_total{router="agent"}`,
		`svcbridge_drift_repairs_total{router="hub-configmap"}`,
		`svcbridge_drift_repairs_total{router="kubernetes-service"}`,
		`svcbridge_kubernetes_api_calls_total{resource="configmaps",result="ok",verb="update"}`,
		`svcbridge_kubernetes_api_calls_total{resource="services",result="error",verb="ensure"}`,
		`svcbridge_fanout_agents`,
		`svcbridge_fanout_batch_seconds`,
		`svcbridge_http_request_duration_seconds{method="POST",route="/api/v3/services"}`,
		`svcbridge_services{status="ready"}`,
		`svcbridge_services{status="pending"}`,
		`svcbridge_services{status="failed"}`,
		`svcbridge_services{status="deleting"}`,
		`svcbridge_agents_unacknowledged`,
		`svcbridge_agents_unacknowledged_oldest_seconds`,
		`svcbridge_scrape_errors_total{source="store"}`,
	}
	for _, key := range zero {
		if v, ok := start[key]; !ok || v != 0 {
			t.Errorf("at start %s = %v (present: %v), want a series at 0", key, v, ok)
		}
	}
	if _, ok := start[`svcbridge_task_queue_pollers{task_queue="svcbridge"}`]; !ok {
		t.Errorf("at start no svcbridge_task_queue_pollers series for the task queue")
	}
	build := 0
	for key, v := range start {
		if strings.HasPrefix(key, "svcbridge_build_info{") && strings.Contains(key, `goversion="go`) && v == 1 {
			build++
		}
	}
	if build != 1 {
		t.Errorf("want one svcbridge_build_info series at 1 with the Go version, have %d", build)
	}

	if code, body := call("POST", "/api/v3/agents", map[string]any{"name": "hub", "routerMode": "interior",
		"defaultRouter": true, "host": "hub.example.com"}); code != http.StatusCreated {
		t.Fatalf("create agent: %d %s", code, body)
	}
	if code, body := call("POST", "/api/v3/services", map[string]any{"name": "vendor", "type": "external",
		"resource": "203.0.113.10", "targetPort": 443}); code != http.StatusCreated {
		t.Fatalf("create service: %d %s", code, body)
	}
	after := waitFor("vendor ready, the routers written, a worker polling", func(m map[string]float64) bool {
		return m[`svcbridge_services{status="ready"}`] == 1 &&
			m[`svcbridge_service_reconciles_total{outcome="ready"}`] >= 1 &&
			m[`svcbridge_router_config_writes_total{router="agent"}`] >= 1 &&
			m[`svcbridge_task_queue_pollers{task_queue="svcbridge"}`] >= 1 &&
			m[`svcbridge_fanout_batch_seconds`] >= 1 // the new agent's router, through the agent queue
	})
	for key, want := range map[string]float64{
		`svcbridge_services{status="pending"}`:                                             0,
		`svcbridge_service_reconciles_total{outcome="failed"}`:                             0,
		`svcbridge_http_request_duration_seconds{method="POST",route="/api/v3/services"}`:  1,
		`svcbridge_http_requests_total{code="201",method="POST",route="/api/v3/services"}`: 1,
	} {
		if after[key] != want {
			t.Errorf("after the create %s = %v, want %v", key, after[key], want)
		}
	}
	for _, key := range []string{`svcbridge_service_ready_seconds`, `svcbridge_fanout_agents`} {
		if after[key] < 1 {
			t.Errorf("after the create %s = %v, want it moved", key, after[key])
		}
	}
}
