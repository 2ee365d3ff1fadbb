// Command prodbench is scripts/prod-bench.sh's helper: what the script
// needs that neither svcbridge nor the Temporal binaries do.
//
//	prodbench namespace FRONTEND NAMESPACE
//	    waits for the Temporal frontend, registers NAMESPACE (72 h
//	    retention, as docker-compose.yml's temporal-namespace step) and
//	    adds svcbridge's search attributes, and returns once starts with
//	    them are taken.
//	prodbench proxy LISTEN METRICS_FROM API...
//	    serves LISTEN as one svcbridge API in front of the api processes
//	    API... (base URLs), round robin: `svcbridge bench` takes one
//	    --server. /metrics is API[0]'s exposition followed by those of the
//	    comma-separated METRICS_FROM URLs (the workers') and the other
//	    apis', so bench reads one api's CPU and RSS and the store's gauges
//	    (the first sample of each), every worker's workflow task times,
//	    and every process's store statements (summed).
//	prodbench floor FRONTEND NAMESPACE N CLIENTS [no-status]
//	    what Temporal alone allows the scale bench's fill: N workflows of
//	    a service's shape, started by CLIENTS clients with a worker in this
//	    process, then signalled to end (see floor); one JSON line.
//	    no-status: without the passes' ProvisioningStatus upserts.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"svcbridge/service"
	"svcbridge/workflows"
	"svcbridge/workflows/temporalclient"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("prodbench: ")
	args := os.Args[1:]
	var err error
	switch {
	case len(args) == 3 && args[0] == "namespace":
		err = namespace(args[1], args[2])
	case len(args) >= 4 && args[0] == "proxy":
		err = proxy(args[1], args[2], args[3:])
	case (len(args) == 5 || len(args) == 6 && args[5] == "no-status") && args[0] == "floor":
		var n, clients int
		if n, err = strconv.Atoi(args[3]); err == nil {
			if clients, err = strconv.Atoi(args[4]); err == nil {
				err = floor(args[1], args[2], n, clients, len(args) == 5)
			}
		}
	default:
		err = errors.New("usage: prodbench namespace FRONTEND NAMESPACE | prodbench proxy LISTEN METRICS_FROM API... | prodbench floor FRONTEND NAMESPACE N CLIENTS [no-status]")
	}
	if err != nil {
		log.Fatal(err)
	}
}

// namespace does docker-compose.yml's temporal-namespace step through the
// Temporal API (the temporal CLI is not built here).
func namespace(frontend, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := client.Options{HostPort: frontend, Namespace: ns, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))}
	var c client.Client
	for {
		var err error
		if c, err = client.DialContext(ctx, opts); err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				break
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Temporal frontend %s: %w", frontend, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	defer c.Close()
	_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(72 * time.Hour)})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %s: %w", ns, err)
	}
	// The namespace is served once the frontend's cache has it.
	for {
		err := temporalclient.RegisterSearchAttributes(ctx, c, ns)
		if err == nil {
			return awaitSearchAttributes(ctx, c)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes of %s: %w", ns, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// awaitSearchAttributes waits until the frontend takes starts with the
// search attributes, which it does a few seconds after they are added: it
// starts a probe, on a task queue no worker polls, until one is taken, and
// terminates it.
func awaitSearchAttributes(ctx context.Context, c client.Client) error {
	id := "prodbench-probe-" + time.Now().Format("150405")
	for {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "prodbench-probe",
			TypedSearchAttributes: temporal.NewSearchAttributes(workflows.StatusKey.ValueSet(service.StatusPending))}, "Probe")
		if err == nil {
			return c.TerminateWorkflow(ctx, id, "", "probe")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the search attributes: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func proxy(listen, metricsFrom string, apis []string) error {
	var backends []*url.URL
	for _, a := range apis {
		u, err := url.Parse(a)
		if err != nil {
			return err
		}
		backends = append(backends, u)
	}
	var extra []string
	if metricsFrom != "" {
		extra = strings.Split(metricsFrom, ",")
	}
	// 50 bench clients keep as many connections alive to each api: the
	// default 2 idle per host would open a new one for most requests.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	var next atomic.Uint64
	rr := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backends[(next.Add(1)-1)%uint64(len(backends))])
			r.Out.Host = r.In.Host
		},
		Transport: t,
	}
	hc := &http.Client{Transport: t, Timeout: 10 * time.Second}
	mux := http.NewServeMux()
	mux.Handle("/", rr)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		// The first api's gauges come first (a reader takes the first
		// sample); the counters of every process follow, to be summed.
		from := append([]string{backends[0].String()}, extra...)
		for _, b := range backends[1:] {
			from = append(from, b.String())
		}
		for i, u := range from {
			resp, err := hc.Get(strings.TrimRight(u, "/") + "/metrics")
			if err != nil {
				if i == 0 {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				continue
			}
			if i == 0 && resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				http.Error(w, resp.Status, http.StatusBadGateway)
				return
			}
			io.Copy(w, resp.Body)
			resp.Body.Close()
		}
	})
	log.Printf("%s -> %s (metrics also from %v)", listen, strings.Join(apis, " "), extra)
	return http.ListenAndServe(listen, mux)
}
