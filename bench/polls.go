package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// PollsResult is the polls scenario's line: the rate of unchanged agent
// polls beside that of /healthz, asked by the same client.
type PollsResult struct {
	Scenario string `json:"scenario"`
	N        int    `json:"n"`
	Clients  int    `json:"clients"`
	Agents   int    `json:"agents"`
	// Requests a second of each phase's wall time, and each poll's rate
	// as a share of /healthz's.
	HealthzRate   float64 `json:"healthz_per_s"`
	ChangesRate   float64 `json:"changes_per_s"`
	Router304Rate float64 `json:"router_304_per_s"`
	ChangesRatio  float64 `json:"changes_ratio"`
	Router304Rat  float64 `json:"router_304_ratio"`
	// The server process's CPU time per request of each phase, in
	// microseconds (process_cpu_seconds_total of its /metrics, which
	// counts in hundredths of a second: use an --n of thousands); absent
	// for an embedded server, whose process is the bench's too. A fleet
	// polling P times a second takes P x this of one core's second.
	HealthzCPU   *float64 `json:"healthz_server_cpu_us,omitempty"`
	ChangesCPU   *float64 `json:"changes_server_cpu_us,omitempty"`
	Router304CPU *float64 `json:"router_304_server_cpu_us,omitempty"`
	Errors       int      `json:"errors"`
	WallS        float64  `json:"wall_s"`
}

// pollAgent is an agent of the scenario: its credential and the ETag of
// its router document.
type pollAgent struct {
	agent
	etag string
}

// polls measures what a fleet's unchanged polls cost the server: --agents
// edge agents acknowledge their changes and read their router documents;
// then --clients clients send --n requests of each kind in turn, one kind
// at a time: GET /healthz, GET /api/v3/agent/config/changes (which must
// answer no change), GET /api/v3/agent/router with If-None-Match (which
// must answer 304). One HTTP client with a kept-alive connection per
// client serves every phase, so the rates differ only by what the server
// does.
func (b *bench) polls(ctx context.Context, enc *json.Encoder) (int, error) {
	const scenario = "polls"
	start := time.Now()
	created, err := b.createAgents(ctx, scenario, b.cfg.Agents, func(int) []string { return []string{} })
	if err != nil {
		return 0, err
	}
	defer b.cleanup(nil, nil, created)
	hc := &http.Client{Timeout: b.cfg.OpTimeout, Transport: &http.Transport{
		MaxIdleConns: b.cfg.Clients, MaxIdleConnsPerHost: b.cfg.Clients, IdleConnTimeout: time.Minute}}
	defer hc.CloseIdleConnections()
	agents := make([]pollAgent, len(created))
	for i, a := range created {
		agents[i] = pollAgent{agent: a}
		if agents[i].etag, err = b.settleAgent(ctx, hc, a); err != nil {
			return 0, fmt.Errorf("agent %s: %w", a.Name, err)
		}
	}
	r := PollsResult{Scenario: scenario, N: b.cfg.N, Clients: b.cfg.Clients, Agents: len(agents)}
	var errs atomic.Int64
	// phase sends the requests, and returns their rate and the server's
	// CPU time per request (nil when not known).
	phase := func(req func(i int) (*http.Request, int)) (float64, *float64) {
		cpu0, known := b.serverCPU(ctx)
		t0 := time.Now()
		Parallel(ctx, b.cfg.N, b.cfg.Clients, func(i int) {
			q, want := req(i)
			if err := pollOnce(hc, q.WithContext(ctx), want); err != nil {
				errs.Add(1)
				b.opError(scenario, err)
			}
		})
		rate := round(float64(b.cfg.N)/time.Since(t0).Seconds(), 1)
		cpu1, still := b.serverCPU(ctx)
		if !known || !still {
			return rate, nil
		}
		perRequest := round((cpu1-cpu0)/float64(b.cfg.N)*1e6, 1)
		return rate, &perRequest
	}
	agentReq := func(a pollAgent, path string) *http.Request {
		q := b.request(path)
		q.Header.Set("Authorization", "Bearer "+a.Token)
		return q
	}
	r.HealthzRate, r.HealthzCPU = phase(func(int) (*http.Request, int) { return b.request("/healthz"), http.StatusOK })
	r.ChangesRate, r.ChangesCPU = phase(func(i int) (*http.Request, int) {
		return agentReq(agents[i%len(agents)], "/api/v3/agent/config/changes"), http.StatusOK
	})
	r.Router304Rate, r.Router304CPU = phase(func(i int) (*http.Request, int) {
		a := agents[i%len(agents)]
		q := agentReq(a, "/api/v3/agent/router")
		q.Header.Set("If-None-Match", a.etag)
		return q, http.StatusNotModified
	})
	if r.HealthzRate > 0 {
		r.ChangesRatio = round(r.ChangesRate/r.HealthzRate, 3)
		r.Router304Rat = round(r.Router304Rate/r.HealthzRate, 3)
	}
	r.Errors = int(errs.Load())
	r.WallS = round(time.Since(start).Seconds(), 3)
	return r.Errors, enc.Encode(r)
}

// serverCPU is the server process's CPU seconds so far, from its
// /metrics; not known for an embedded server, which is this process.
func (b *bench) serverCPU(ctx context.Context) (float64, bool) {
	if b.cfg.Embedded {
		return 0, false
	}
	return b.serverMetric(ctx, "process_cpu_seconds_total")
}

// request is a GET of path on the server, without credentials.
func (b *bench) request(path string) *http.Request {
	q, _ := http.NewRequest(http.MethodGet, b.c.server+path, nil) // the server URL is checked
	q.Header.Set("User-Agent", "svcbridge-cli")
	return q
}

// settleAgent acknowledges an agent's pending change, as an agent does
// once it applied it, and returns its router document's ETag.
func (b *bench) settleAgent(ctx context.Context, hc *http.Client, a agent) (string, error) {
	as := &client{server: b.c.server, token: a.Token, http: hc}
	var ch struct {
		LastUpdated int64 `json:"lastUpdated"`
	}
	if err := as.call(ctx, http.MethodGet, "/api/v3/agent/config/changes", nil, &ch); err != nil {
		return "", err
	}
	if err := as.call(ctx, http.MethodPatch, "/api/v3/agent/config/changes", map[string]int64{"lastUpdated": ch.LastUpdated}, nil); err != nil {
		return "", err
	}
	_, h, _, _, err := as.exchange(ctx, http.MethodGet, "/api/v3/agent/router", nil, nil, nil)
	if err != nil {
		return "", err
	}
	if h.Get("ETag") == "" {
		return "", errors.New("its router document has no ETag")
	}
	return h.Get("ETag"), nil
}

// pollOnce sends q and reads the whole answer, which must be want; a
// change read by a changes poll is an error: the poll was not unchanged.
func pollOnce(hc *http.Client, q *http.Request, want int) error {
	resp, err := hc.Do(q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("GET %s: status %d, want %d: %.200s", q.URL.Path, resp.StatusCode, want, body)
	}
	if strings.HasSuffix(q.URL.Path, "/config/changes") && strings.Contains(string(body), `"microserviceConfig":true`) {
		return fmt.Errorf("GET %s: a change to report: %s", q.URL.Path, body)
	}
	return nil
}
