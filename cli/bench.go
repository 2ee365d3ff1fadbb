package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"svcbridge/bench"
)

const benchHelp = `Drive a svcbridge server through measured scenarios and print one JSON line of
figures per scenario. Without --server, bench starts an embedded svcbridge (store,
Temporal server, worker and API on loopback ports, files in a temporary directory)
and stops it afterwards, so it needs nothing running. It does not read
SVCBRIDGE_SERVER: pointing it at a server is always explicit.

Scenarios (--scenario, default all):

  create-latency      --n external services, one at a time: create -> ready, as
                      seen through the API.
  concurrent-creates  --n services created by --clients clients at once, each
                      until ready.
  fanout              --agents edge agents tagged with a run token; --n services
                      carrying it, created by --clients clients: create -> ready
                      and every agent's router holds the listener.
  tag-edits           --agents agents, half tagged token x, half token y; one
                      service per client, each edited --n/--clients times in turn
                      between tags [x] and [y]: edit -> the listeners are on
                      exactly the agents the tag rule selects.
  scale               not in all (it is long): grows the system to --n services
                      in --steps steps, and measures each step, the empty
                      system first (step 0). See below.
  polls               not in all: --agents edge agents acknowledge their changes;
                      then --clients clients send --n requests of each kind in
                      turn, on one HTTP client: GET /healthz, the agents'
                      unchanged polls GET /api/v3/agent/config/changes (no
                      change to report) and GET /api/v3/agent/router with
                      If-None-Match (304). One line: {"scenario", "n",
                      "clients", "agents", "healthz_per_s", "changes_per_s",
                      "router_304_per_s", "changes_ratio", "router_304_ratio"
                      (a poll's rate over /healthz's), "healthz_server_cpu_us",
                      "changes_server_cpu_us", "router_304_server_cpu_us" (the
                      server process's CPU per request, from its /metrics;
                      absent for an embedded server), "errors", "wall_s"}.

A client waits for its service to be ready as a client would: with long polls of
it (GET with If-None-Match and timeoutSeconds), answered as the service changes, so
a latency ends when the server answers the change; a server without long polls is
read every --poll. Routers' outcomes (fanout, tag-edits) are seen by one observer
per scenario that reads the services and the agents' routers every --poll: the load
it adds does not grow with --clients, and its latencies are at most --poll plus one
observation late. Each client keeps its own connection.

Each line: {"scenario", "n", "clients", "agents", "p50_ms", "p95_ms", "p99_ms",
"throughput_per_s", "errors", "lost_entries", "wall_s", "poll_ms"}. Latencies are
of the operations that succeeded; throughput is those per second of wall time; errors
counts operations that failed or timed out (--op-timeout); lost_entries comes from
a final consistency check after the run (given --settle to converge): every
created service ready with its listener on the hub router at its bridgePort;
fanout: every agent's router holds every listener; tag-edits: each agent's
listeners are exactly what the rule selects.

scale prints one line per step, as soon as the step is done: step 0 on the
system as it is, then steps 1..--steps, step k filling up to k*n/steps
services in all (counting those the server already had). A step's fill
creates external services with no tags (they select no agent: no fan-out)
on --clients clients (default 50 for scale), each POST as soon as the last
was answered, while one reader reads GET /api/v3/services?limit=500 every
50 ms (none with --no-fill-reader); the fill ends when every service it created is ready (or failed):
the server's svcbridge_services{status="pending"} gauge is read every
max(--poll, 100ms) and the services listed once it is 0; or after
--ready-timeout with the rest counted pending. "statements_per_service" and
"transactions_per_service" are what the server's processes sent their store over the
fill (svcbridge_store_statements_total, _transactions_total of its /metrics, summed),
per service filled; "workflow_tasks_per_service" and "local_activities_per_service"
the service workflows' (the worker's SDK metrics), and
"sticky_cache_misses_per_1000_tasks" how many of those tasks found their workflow
evicted and fetched its history again. Then, once the server is at rest
(its process_cpu_seconds_total grew by less than a fifth of a core over a
second; at most 30 s, "rest_wait_s" in the line): --reads each of GET
/api/v3/services?limit=500, of the whole list, of the hub's router document
(GET /api/v3/agents/{hub}/router: 200, then with If-None-Match: <its ETag>,
which should be 304), the server's RSS (process_resident_memory_bytes of
its /metrics; an embedded server is this process, so /proc/self/status when
/metrics does not answer), and, once its CPU stays under a twentieth of a
core (at most 30 s more), its CPU with no request and with a watch of the
services open (GET /api/v3/services?watch=true, as the console keeps one: its
feed reads the list after each change), in windows of 1.5 s: one without, two with
the watch (once it sent its initial state), one without; last, --samples
services created one at a time,
create -> ready as create-latency measures it (they stay, and count toward
the next step). Each line: {"scenario", "step", "target", "services",
"clients", "filled", "fill_s", "fill_rate_per_s" (services ready per second
of fill), "post_rate_per_s" (POSTs answered per second), "post_p50_ms",
"post_p99_ms", "gets", "get_p50_ms", "get_p99_ms" (the reader's, during the
fill), "pending", "workflow_task_p999_ms" (the server's worker: the slowest
workflow type's p99.9 workflow task time, from its /metrics after the fill;
Temporal times a task out at 10 s), "rest_wait_s", "samples", "create_ready_p50_ms", "create_ready_p90_ms",
"list500_p50_ms", "list_all_p50_ms", "list_all_kb", "hub_agent",
"hub_doc_ms", "hub_doc_kb", "hub_doc_304_ms", "hub_304", "hub_note" (why a
hub figure is missing, e.g. no hub agent), "rss_mb" (MiB), "rss_from"
("metrics" or "proc"), "rest_cpu_ms_per_s", "watch_cpu_ms_per_s" (0 when
/metrics does not say; an embedded server's counts the bench's process),
"errors", "wall_s"}; "services" is how many the whole
list held. Against --server, deleting a large --n at the end takes a while.

Every object bench creates is named bench-<run>-..., and deleted at the end
(scale leaves an embedded server's: it is discarded whole). The server needs a
default router (hub), except for scale, which says in its lines when there is
none; an embedded server gets one. The exit code is 1 when any scenario had
errors or lost entries (scale: errors or services still pending).`

func benchCmd(o Options) *cobra.Command {
	var cfg bench.Config
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Measure a svcbridge server (or an embedded one): latency, throughput, fan-out, tag edits",
		Long:    benchHelp + "\n" + exitCodesHelp,
		Example: "  svcbridge bench\n  svcbridge bench --scenario fanout --n 50 --agents 100\n  svcbridge bench --server http://127.0.0.1:8080 --scenario create-latency --n 20\n  svcbridge bench --scenario scale --n 10000",
		Args:    cobra.NoArgs,
		RunE: run(o, func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, o, cfg, cmd.Flags().Changed("clients"))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Server, "server", "", "svcbridge API URL to measure (default: start an embedded svcbridge)")
	f.StringVar(&cfg.Token, "token", "", "bearer token for --server (env SVCBRIDGE_TOKEN)")
	f.StringVar(&cfg.Metrics, "metrics", "", "base URL whose /metrics the figures read (default: --server's), e.g. a proxy that joins several processes'")
	f.StringVar(&cfg.Scenario, "scenario", "all", "all (which leaves out "+strings.Join(bench.Long, ", ")+"), or one of "+strings.Join(append(slices.Clone(bench.Scenarios), bench.Long...), ", "))
	f.IntVar(&cfg.N, "n", 100, "services (create-latency, concurrent-creates, fanout; scale: in all at the last step) or tag edits (tag-edits)")
	f.IntVar(&cfg.Clients, "clients", 10, "concurrent clients (scale: 50 unless set)")
	f.IntVar(&cfg.Agents, "agents", 10, "agents for fanout and tag-edits")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", time.Minute, "how long one operation may take before it counts as an error")
	f.DurationVar(&cfg.Poll, "poll", 5*time.Millisecond, "how often the routers' outcomes (and a server without long polls) are read")
	f.DurationVar(&cfg.Settle, "settle", 15*time.Second, "how long the final consistency check waits for convergence")
	f.StringVar(&cfg.TagPrefix, "tag-prefix", "service.iofog.org/tag", "the server's SERVICE_ANNOTATION_TAG")
	f.IntVar(&cfg.Steps, "steps", 4, "scale: steps after the empty system (step 0)")
	f.IntVar(&cfg.Samples, "samples", 20, "scale: one-at-a-time creates timed create -> ready per step (0: none)")
	f.IntVar(&cfg.Reads, "reads", 5, "scale: timed reads per step of each list and of the hub's router document")
	f.BoolVar(&cfg.NoFillReader, "no-fill-reader", false, "scale: no reader listing a page of services during the fill (a dashboard's load), so that the fill's costs are the services' own")
	f.DurationVar(&cfg.ReadyTimeout, "ready-timeout", 10*time.Minute, "scale: how long a fill waits, after its last create, for every service to be ready")
	cmd.RegisterFlagCompletionFunc("scenario", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return append(append([]string{"all"}, bench.Scenarios...), bench.Long...), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// checkBench checks bench's flags and fills in what they leave to it:
// scale runs 50 clients unless --clients was given (clientsSet).
func checkBench(cfg bench.Config, clientsSet bool) (bench.Config, error) {
	if cfg.Scenario != "all" && !slices.Contains(bench.Scenarios, cfg.Scenario) && !slices.Contains(bench.Long, cfg.Scenario) {
		return cfg, fmt.Errorf("invalid --scenario %q: want all or one of %s", cfg.Scenario, strings.Join(append(slices.Clone(bench.Scenarios), bench.Long...), ", "))
	}
	if cfg.Scenario == "scale" && !clientsSet {
		cfg.Clients = 50
	}
	if cfg.N < 1 || cfg.Clients < 1 || cfg.Agents < 1 {
		return cfg, errors.New("--n, --clients and --agents must be at least 1")
	}
	if cfg.Steps < 1 || cfg.Reads < 1 || cfg.Samples < 0 {
		return cfg, errors.New("--steps and --reads must be at least 1, --samples at least 0")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	return cfg, nil
}

// runBench measures --server, or an embedded svcbridge it starts (from
// o.Embedded) and stops.
func runBench(cmd *cobra.Command, o Options, cfg bench.Config, clientsSet bool) error {
	cfg, err := checkBench(cfg, clientsSet)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	errOut := cmd.ErrOrStderr()
	cfg.Embedded = cfg.Server == ""
	if cfg.Embedded {
		if o.Embedded == nil {
			return errors.New("bench needs --server (this build cannot start an embedded svcbridge)")
		}
		fmt.Fprintln(errOut, "bench: starting an embedded svcbridge...")
		e, err := o.Embedded(ctx, cmd)
		if err != nil {
			return fmt.Errorf("start the embedded svcbridge: %w", err)
		}
		defer e.Stop()
		cfg.Server, cfg.Token = e.Server, e.Token
		fmt.Fprintln(errOut, "bench: embedded svcbridge at", cfg.Server)
	}
	if cfg.Server, err = normalizeServer(cfg.Server); err != nil {
		return err
	}
	if cfg.Token == "" && !cfg.Embedded {
		cfg.Token = strings.TrimSpace(os.Getenv("SVCBRIDGE_TOKEN"))
	}
	return benchError(bench.Run(ctx, cfg, cmd.OutOrStdout(), errOut))
}

// benchError gives bench's request errors the exit codes of the CLI's:
// 2 for a request the API rejected, 5 for a server that did not answer.
func benchError(err error) error {
	var ae *bench.APIError
	var ue *bench.UnreachableError
	switch {
	case errors.As(err, &ue):
		return &ExitError{Code: ExitUnreachable, Err: err}
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500:
		return &ExitError{Code: ExitRejected, Err: err}
	}
	return err
}
