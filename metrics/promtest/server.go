package promtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"svcbridge/porttest"
)

// Interval is how often a Server scrapes and evaluates its rules.
const Interval = time.Second

// Server is a Prometheus of one test: its own directory and port.
type Server struct {
	URL     string
	started time.Time
	api     v1.API
	done    chan error
	out     *lockedBuffer
}

// lockedBuffer is the process' output, written by exec and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start runs Prometheus with rules (a rule file's content), scraping the
// /metrics of targets (host:port) and evaluating every Interval, until the
// test ends. Targets that do not answer yet are scraped as down.
func Start(t testing.TB, rules []byte, targets ...string) *Server {
	t.Helper()
	bin := Tool(t, "prometheus")
	dir := t.TempDir()
	config := map[string]any{
		"global":     map[string]any{"scrape_interval": Interval.String(), "scrape_timeout": Interval.String(), "evaluation_interval": Interval.String()},
		"rule_files": []string{"rules.yaml"},
		"scrape_configs": []any{map[string]any{
			"job_name": "svcbridge", "static_configs": []any{map[string]any{"targets": targets}}}},
	}
	b, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"prometheus.yml": b, "rules.yaml": rules} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", porttest.Free(t))
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	s := &Server{URL: "http://" + addr, started: time.Now(), done: make(chan error, 1), out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("prometheus output:\n%s", s.out)
		}
	})
	client, err := api.NewClient(api.Config{Address: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	s.api = v1.NewAPI(client)
	s.waitFor(t, "Prometheus to be ready", time.Minute, func() (bool, string) {
		resp, err := http.Get(s.URL + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return s
}

// waitFor polls cond until it holds, failing the test after timeout or
// when Prometheus exits.
func (s *Server) waitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("prometheus exited (%v) while waiting for %s:\n%s", err, what, s.out)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
}

// Alerts are the alerts named name that are pending or firing now.
func (s *Server) Alerts(t testing.TB, name string) []v1.Alert {
	t.Helper()
	res, err := s.api.Alerts(context.Background())
	if err != nil {
		t.Fatalf("prometheus alerts: %v", err)
	}
	var out []v1.Alert
	for _, a := range res.Alerts {
		if string(a.Labels[model.AlertNameLabel]) == name {
			out = append(out, a)
		}
	}
	return out
}

// WaitAlert waits until the alert name is in state (firing, pending) on
// a series with the labels of match, or, for state "", until it is
// neither on any, and returns its alerts then.
func (s *Server) WaitAlert(t testing.TB, name string, state v1.AlertState, match model.LabelSet, timeout time.Duration) []v1.Alert {
	t.Helper()
	var alerts []v1.Alert
	what := name + " " + string(state)
	if state == "" {
		what = name + " resolved"
	}
	s.waitFor(t, what, timeout, func() (bool, string) {
		alerts = s.Alerts(t, name)
		var states []string
		for _, a := range alerts {
			if a.State == state && a.Labels.Merge(match).Equal(a.Labels) {
				return true, ""
			}
			states = append(states, fmt.Sprintf("%s %v", a.State, a.Labels))
		}
		return state == "" && len(alerts) == 0, strings.Join(states, "; ")
	})
	t.Logf("%s %s after Prometheus' start", what, time.Since(s.started).Round(100*time.Millisecond))
	return alerts
}

// Query evaluates expr at now.
func (s *Server) Query(t testing.TB, expr string) model.Vector {
	t.Helper()
	v, _, err := s.api.Query(context.Background(), expr, time.Now())
	if err != nil {
		t.Fatalf("query %q: %v", expr, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %q: a %s, not a vector", expr, v.Type())
	}
	return vec
}

// QueryRange evaluates expr from start to end at every step, as a graph
// panel does.
func (s *Server) QueryRange(t testing.TB, expr string, start, end time.Time, step time.Duration) model.Matrix {
	t.Helper()
	v, _, err := s.api.QueryRange(context.Background(), expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		t.Fatalf("query %q: %v", expr, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		t.Fatalf("query %q: a %s, not a matrix", expr, v.Type())
	}
	return m
}
