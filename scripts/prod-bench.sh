#!/usr/bin/env bash
# svcbridge's scale benchmark in the production topology, on one host from
# binaries, as systemtest's TestComposeRehearsal runs docker-compose.yml: a
# Temporal server on the local PostgreSQL (the Compose release, built by
# scripts/temporal-bins.sh), `svcbridge migrate`, then api and worker
# processes with the file's settings. Two rounds, each on fresh databases:
# 1 api + 1 worker, then 2 api + 2 worker; each runs
#   svcbridge bench --server <api or proxy> --scenario scale --n $N --steps $STEPS
# and the figures of both are printed at the end, with the load average
# at the end of each step (the machine may be shared).
#
# bench takes one --server: with several apis it is scripts/prodbench's
# round robin proxy in front of them, with one the api itself. Either way
# bench reads the proxy's /metrics (--metrics): the first api's followed
# by the workers' and the other apis' (see scripts/prodbench).
#
# Usage: scripts/prod-bench.sh            # N=10000 STEPS=2
#        N=1000 scripts/prod-bench.sh     # a quick run
#        ROUNDS="1 2"     # one round per count: that many apis and workers
#        SCENARIO=polls   # instead: the fleet's unchanged polls against the
#                         # first api alone (bench --scenario polls --n $N)
#        SCENARIO=ratio   # instead: PAIRS (2) pairs of a floor round and a
#                         # 1 api + 1 worker round, interleaved, STEPS=1,
#                         # bench --no-fill-reader: svcbridge's fill over
#                         # the floor's, and its own CPU over Temporal's
#        SCENARIO=floor   # instead: Temporal alone, what it allows the
#                         # fill: N workflows of a service's shape started
#                         # by 50 clients, no svcbridge (prodbench floor)
#        FLOOR_STATUS=no  # the floor without ProvisioningStatus upserts
#        NUM_HISTORY_SHARDS=16 # the Temporal server's (the image's default: 4)
#        SERVER_BIN=path  # the api's and worker's binary (another build's,
#                         # to compare builds); bench is always this tree's
#        SERVER_ENV="GOGC=200 GOMAXPROCS=1" # more environment of the api
#                         # and worker processes only
#        PORT_BASE=27300 PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres OUT=dir
#        PROMETHEUS_ENDPOINT=127.0.0.1:27396 PPROF_PORT=27395
#                         # reach the Temporal server (its image's settings):
#                         # its metrics on /metrics (by default on
#                         # PORT_BASE + 9: each round reports its history
#                         # events and fetches), its /debug/pprof
# Needs PostgreSQL (trusted local user, psql), jq, and the 41 ports from
# PORT_BASE free (below 32768: Temporal keeps its ports in a smallint).
# Logs, bench lines and per-process CPU are kept in $OUT (printed).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

N=${N:-10000}
STEPS=${STEPS:-2}
ROUNDS=${ROUNDS:-"1 2"}
[ "${SCENARIO:-}" = floor ] && ROUNDS=1 # no api or worker to count
[ "${SCENARIO:-}" = ratio ] && STEPS=1
SCENARIO=${SCENARIO:-scale}
PORT_BASE=${PORT_BASE:-27300}
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
export PGHOST PGPORT PGUSER
TOKEN=compose-admin-token-change-me-0001 # deploy/compose/tokens.yaml's example
DB=prodbench                             # databases $DB, ${DB}_temporal, ${DB}_temporal_visibility
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/svcbridge-prod-bench.XXXXXX")}
mkdir -p "$OUT"

log() { echo "prod-bench: $*" >&2; }

PIDS=()
stop_all() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[i]}" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
drop_dbs() {
  for d in "$DB" "${DB}_temporal" "${DB}_temporal_visibility"; do
    # (no NOTICE for a database not there)
    PGOPTIONS="-c client_min_messages=warning" psql -qAtX -d postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null
  done
}
cleanup() {
  stop_all
  drop_dbs 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background, its output in $OUT/NAME.log.
start() {
  local name=$1
  shift
  "$@" >"$OUT/$name.log" 2>&1 &
  PIDS+=($!)
}

# wait_http URL WHAT: until URL answers 200 (60 s).
wait_http() {
  for _ in $(seq 600); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "$2 did not answer $1 in 60 s (logs in $OUT)"
  exit 1
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# cpu_s PID: user + system CPU seconds of a process so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# busy_s: CPU seconds the whole machine spent busy so far (not idle or
# waiting on I/O), every process's: PostgreSQL's and the bench client's too.
busy_s() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.1f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat; }

# pg_backends DB...: NAME:PID of each PostgreSQL backend serving one of
# the databases DB (NAME: pg-DB).
pg_backends() {
  local d
  for d in "$@"; do
    psql -qAtX -d postgres -c "SELECT 'pg-$d:' || pid FROM pg_stat_activity WHERE datname = '$d'"
  done
}

# cpu_begin / cpu_end WHAT NOTE: the CPU seconds of the round's processes
# (the caller's pids, NAME:PID), of the PostgreSQL backends serving
# svcbridge's database and Temporal's two (those open at the end; a
# backend that closed meanwhile is not counted), and of the whole machine,
# from cpu_begin to cpu_end, printed as a report; its last line is
# svcbridge's own CPU (api, worker and their backends) over Temporal's
# (the server and its backends), the ratio docs/performance.md tracks.
# temporal_stats: what the round's Temporal server counted so far, from its
# /metrics: workflows completed, their history events, and the history
# fetches and signals its frontend answered (workers fetch a history
# again when a task finds the workflow evicted from their cache).
temporal_stats() {
  curl -fsS "$temporal_metrics/metrics" 2>/dev/null | awk '
    $1 ~ /^history_count_sum\{/ && /operation="CompletionStats"/ { events += $NF }
    $1 ~ /^history_count_count\{/ && /operation="CompletionStats"/ { done += $NF }
    $1 ~ /^service_requests\{/ && /service_name="frontend"/ && /operation="GetWorkflowExecutionHistory"/ { fetches += $NF }
    $1 ~ /^service_requests\{/ && /service_name="frontend"/ && /operation="Signal(WithStart)?WorkflowExecution"/ { signals += $NF }
    END { printf "%d %d %d %d\n", done, events, fetches, signals }'
}

cpu_begin() {
  stats0=$(temporal_stats)
  declare -gA cpu0=()
  local e
  for e in "${pids[@]}" $(pg_backends "$DB" "${DB}_temporal" "${DB}_temporal_visibility"); do
    cpu0[$e]=$(cpu_s "${e#*:}")
  done
  busy0=$(busy_s) started=$SECONDS
}
cpu_end() {
  echo "$1 $((SECONDS - started)) s ($2); CPU seconds meanwhile:"
  local e name used own=0 temporal=0
  declare -A sum=()
  for e in "${pids[@]}" $(pg_backends "$DB" "${DB}_temporal" "${DB}_temporal_visibility"); do
    name=${e%%:*}
    used=$(awk -v a="${cpu0[$e]:-0}" -v b="$(cpu_s "${e#*:}")" 'BEGIN { printf "%.1f", b - a }')
    sum[$name]=$(awk -v a="${sum[$name]:-0}" -v b="$used" 'BEGIN { printf "%.1f", a + b }')
  done
  for name in $(printf '%s\n' "${!sum[@]}" | sort); do
    echo "  $name ${sum[$name]}"
    case $name in
    api* | worker* | "pg-$DB") own=$(awk -v a="$own" -v b="${sum[$name]}" 'BEGIN { print a + b }') ;;
    temporal | pg-"${DB}"_temporal*) temporal=$(awk -v a="$temporal" -v b="${sum[$name]}" 'BEGIN { print a + b }') ;;
    esac
  done
  echo "  the machine (all of it, PostgreSQL and the bench included) $(awk -v a="$busy0" -v b="$(busy_s)" 'BEGIN { printf "%.1f", b - a }') of $(($(nproc) * (SECONDS - started))) s"
  # shellcheck disable=SC2086 # two lists of four numbers
  awk -v a="$stats0" -v b="$(temporal_stats)" 'BEGIN { split(a, x, " "); split(b, y, " ")
    done = y[1] - x[1]; signals = y[4] - x[4]
    printf "  Temporal: %d workflows completed, %.1f history events each; %d history fetches, %.0f per 1,000 signals\n",
      done, (done > 0 ? (y[2] - x[2]) / done : 0), y[3] - x[3], (signals > 0 ? (y[3] - x[3]) * 1000 / signals : 0) }'
  echo "  svcbridge's own (api, worker, pg-$DB) $own over Temporal's (temporal, pg-${DB}_temporal*) $temporal: $(awk -v a="$own" -v b="$temporal" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
}

log "building svcbridge and scripts/prodbench into $OUT"
go build -o "$OUT/svcbridge" ./cmd/svcbridge
SERVER=${SERVER_BIN:-$OUT/svcbridge}
go build -o "$OUT/prodbench" ./scripts/prodbench
BIN=$(scripts/temporal-bins.sh | tail -n 1)

for p in $(seq "$PORT_BASE" $((PORT_BASE + 40))); do
  port_free "$p" || { log "port $p is in use: set PORT_BASE"; exit 1; }
done

# round APIS WORKERS [SUFFIX]: one measured topology, from empty databases;
# APIS floor: Temporal alone. SUFFIX tells apart the files of repeated rounds.
round() {
  local apis=$1 workers=$2 tag="$1x$2${3:-}"
  [ "$apis" = floor ] && tag=floor${3:-}
  local p=$PORT_BASE
  local frontend=127.0.0.1:$p
  log "round $tag: fresh databases, Temporal schema"
  drop_dbs
  psql -qAtX -d postgres -c "CREATE DATABASE $DB" >/dev/null
  # docker-compose.yml's temporal-schema step.
  local schema=$BIN/schema/postgresql/v12
  for d in temporal visibility; do
    local name=${DB}_temporal
    [ "$d" = visibility ] && name=${DB}_temporal_visibility
    SQL_PLUGIN=postgres12 SQL_HOST=$PGHOST SQL_PORT=$PGPORT SQL_USER=$PGUSER SQL_PASSWORD='' \
      bash -c "set -e
        '$BIN/temporal-sql-tool' --db $name create
        '$BIN/temporal-sql-tool' --db $name setup-schema -v 0.0
        '$BIN/temporal-sql-tool' --db $name update-schema -d '$schema/$d/versioned'" >"$OUT/schema-$tag.log" 2>&1
  done

  # docker-compose.yml's temporal service (the image's entrypoint, its
  # environment), on the host's loopback.
  log "round $tag: Temporal server on $frontend"
  local prometheus=${PROMETHEUS_ENDPOINT:-127.0.0.1:$((p + 9))}
  temporal_metrics=http://$prometheus
  start "temporal-$tag" env PROMETHEUS_ENDPOINT="$prometheus" DB=postgres12_pgx DB_PORT="$PGPORT" POSTGRES_SEEDS="$PGHOST" POSTGRES_USER="$PGUSER" POSTGRES_PWD='' \
    BIND_ON_IP=127.0.0.1 DBNAME="${DB}_temporal" VISIBILITY_DBNAME="${DB}_temporal_visibility" \
    SQL_MAX_CONNS=10 SQL_MAX_IDLE_CONNS=10 SQL_VIS_MAX_CONNS=5 SQL_VIS_MAX_IDLE_CONNS=5 \
    NUM_HISTORY_SHARDS="${NUM_HISTORY_SHARDS:-4}" \
    DYNAMIC_CONFIG_FILE_PATH="$PWD/deploy/compose/temporal-dynamicconfig.yaml" \
    FRONTEND_GRPC_PORT=$p FRONTEND_HTTP_PORT=$((p + 1)) FRONTEND_MEMBERSHIP_PORT=$((p + 2)) \
    HISTORY_GRPC_PORT=$((p + 3)) HISTORY_MEMBERSHIP_PORT=$((p + 4)) MATCHING_GRPC_PORT=$((p + 5)) \
    MATCHING_MEMBERSHIP_PORT=$((p + 6)) WORKER_GRPC_PORT=$((p + 7)) WORKER_MEMBERSHIP_PORT=$((p + 8)) \
    "$BIN/temporal-server" start
  local temporal_pid=$!
  "$OUT/prodbench" namespace "$frontend" svcbridge
  local pids=("temporal:$temporal_pid")

  if [ "$apis" = floor ]; then
    log "round $tag: prodbench floor, $N workflows from 50 clients (Temporal alone)"
    cpu_begin
    local no_status=()
    [ "${FLOOR_STATUS:-yes}" = no ] && no_status=(no-status)
    local line
    line=$("$OUT/prodbench" floor "$frontend" svcbridge "$N" 50 "${no_status[@]}" 2>"$OUT/floor.log")
    jq -c --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '. + {load: $load}' <<<"$line" >"$OUT/$tag.jsonl"
    cpu_end "round $tag: ran" "the ends included; prodbench's own CPU is its line's cpu_s" >"$OUT/cpu-$tag.txt"
    stop_all
    return
  fi

  # x-svcbridge-env of docker-compose.yml.
  local env=(DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$DB?sslmode=disable"
    DB_MAX_OPEN_CONNS=10 DB_MAX_IDLE_CONNS=10 DB_CONN_MAX_LIFETIME=30m
    TEMPORAL_ADDRESS="$frontend" TEMPORAL_NAMESPACE=svcbridge TASK_QUEUE=svcbridge CONTROL_PLANE=remote
    BRIDGE_PORTS_RANGE=10024-65535 SERVICE_ANNOTATION_TAG=service.iofog.org/tag
    RESYNC_INTERVAL=30s DRIFT_INTERVAL=10m LOG_LEVEL=info LOG_FORMAT=json ${SERVER_ENV:-})
  env "${env[@]}" "$SERVER" migrate >"$OUT/migrate-$tag.log" 2>&1

  local api_urls=() worker_urls=()
  for i in $(seq "$apis"); do
    local addr=127.0.0.1:$((p + 10 + i))
    start "api$i-$tag" env "${env[@]}" LISTEN="$addr" AUTH_TOKENS_FILE="$PWD/deploy/compose/tokens.yaml" "$SERVER" api
    pids+=("api$i:$!")
    api_urls+=("http://$addr")
  done
  for i in $(seq "$workers"); do
    local addr=127.0.0.1:$((p + 20 + i))
    start "worker$i-$tag" env "${env[@]}" METRICS_LISTEN="$addr" "$SERVER" worker
    pids+=("worker$i:$!")
    worker_urls+=("http://$addr")
  done
  for u in "${api_urls[@]}"; do wait_http "$u/readyz" "an api"; done
  for u in "${worker_urls[@]}"; do wait_http "$u/healthz" "a worker"; done
  local proxy=http://127.0.0.1:$((p + 30))
  start "proxy-$tag" "$OUT/prodbench" proxy "127.0.0.1:$((p + 30))" "$(IFS=,; echo "${worker_urls[*]}")" "${api_urls[@]}"
  pids+=("proxy:$!")
  wait_http "$proxy/healthz" "the proxy"
  # Every worker polls the task queue before the first create.
  for _ in $(seq 600); do
    local pollers
    pollers=$(curl -fsS "${api_urls[0]}/metrics" | awk '$1 ~ /^svcbridge_task_queue_pollers/ { print $2 }')
    [ "${pollers:-0}" -ge "$workers" ] 2>/dev/null && break
    sleep 0.1
  done
  curl -fsS -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -X POST "$proxy/api/v3/agents" \
    -d '{"name": "hub", "routerMode": "interior", "defaultRouter": true, "host": "hub.example.com"}'

  if [ "$SCENARIO" = polls ]; then
    # One api process answers them all: what one replica of the fleet's
    # api costs, without the proxy's hop.
    log "round $tag: svcbridge bench --scenario polls --n $N against ${api_urls[0]} (its log: $OUT/bench-$tag.log)"
    "$OUT/svcbridge" bench --server "${api_urls[0]}" --token "$TOKEN" --scenario polls --n "$N" --clients 10 --agents 100 2>"$OUT/bench-$tag.log" |
      jq -c --arg setup "$apis api + $workers worker" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '. + {setup: $setup, load: $load}' >"$OUT/polls-$tag.jsonl"
    stop_all
    return
  fi

  # What PostgreSQL's sessions of this run wait on, sampled every second
  # during the bench (pg_stat_statements needs a restart of the shared
  # server to load; pg_stat_activity does not).
  (
    while sleep 1; do
      psql -qAtX -d postgres -c "SELECT now()::time(0), datname, state, COALESCE(wait_event_type || ':' || wait_event, 'cpu'), count(*)
        FROM pg_stat_activity WHERE datname LIKE '$DB%' AND state <> 'idle' GROUP BY 2, 3, 4 ORDER BY 2, 5 DESC"
    done
  ) >"$OUT/pg-activity-$tag.log" 2>&1 &
  local sampler=$!
  PIDS+=("$sampler")

  # One api is measured without the proxy's hop; the proxy still joins
  # the processes' /metrics.
  local server=$proxy extra=()
  [ "$apis" = 1 ] && server=${api_urls[0]}
  # The ratio is of the services' own costs: no dashboard reads meanwhile.
  [ "$SCENARIO" = ratio ] && extra=(--no-fill-reader)
  log "round $tag: svcbridge bench --server $server --scenario scale --n $N --steps $STEPS (its log: $OUT/bench-$tag.log)"
  cpu_begin
  local status=0
  "$OUT/svcbridge" bench --server "$server" --metrics "$proxy" --token "$TOKEN" --scenario scale --n "$N" --steps "$STEPS" "${extra[@]}" 2>"$OUT/bench-$tag.log" |
    while read -r line; do
      jq -c --arg setup "$apis api + $workers worker" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '. + {setup: $setup, load: $load}' <<<"$line"
    done >"$OUT/scale-$tag.jsonl" || status=$?
  cpu_end "round $tag: bench ran" "exit $status, the deletes at its end included" >"$OUT/cpu-$tag.txt"
  # The bench's own reads of /metrics (its readings of the pending gauge
  # and its counters) are in the apis' CPU above: how many there were.
  local url reads=0
  for url in "${api_urls[@]}"; do
    reads=$((reads + $(curl -fsS "$url/metrics" | awk '$1 ~ /^svcbridge_http_requests_total\{/ && $1 ~ /route="\/metrics"/ { n += $2 } END { print n + 0 }')))
  done
  echo "  the bench's reads of the apis' /metrics: $reads" >>"$OUT/cpu-$tag.txt"
  stop_all
}

case $SCENARIO in
floor) round floor floor ;;
ratio)
  for i in $(seq "${PAIRS:-2}"); do
    round floor floor "-$i"
    round 1 1 "-$i"
  done
  ;;
*) for r in $ROUNDS; do round "$r" "$r"; done ;;
esac

if [ "$SCENARIO" = ratio ]; then
  echo
  echo "svcbridge (1 api + 1 worker) beside Temporal alone, $N services each, interleaved ($(nproc) cores; $OUT):"
  echo
  echo "| pair | floor's fill | svcbridge's fill | over the floor's | POST p99 | statements / transactions per service | history events per workflow: floor, svcbridge | history fetches per 1,000 signals | svcbridge's own CPU over Temporal's | Temporal's CPU: floor, svcbridge | load average |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for i in $(seq "${PAIRS:-2}"); do
    floor=$(jq -r .fill_rate_per_s "$OUT/floor-$i.jsonl")
    own=$(awk '$1 == "svcbridge'"'"'s" && $2 == "own" { print $NF }' "$OUT/cpu-1x1-$i.txt")
    tf=$(awk '$1 == "temporal" { print $2 }' "$OUT/cpu-floor-$i.txt")
    ts=$(awk '$1 == "temporal" { print $2 }' "$OUT/cpu-1x1-$i.txt")
    # (the "Temporal:" line of cpu_end: events each is its 5th field, fetches per 1,000 signals its 12th)
    hf=$(awk '$1 == "Temporal:" { print $5 }' "$OUT/cpu-floor-$i.txt")
    hs=$(awk '$1 == "Temporal:" { print $5 }' "$OUT/cpu-1x1-$i.txt")
    fetches=$(awk '$1 == "Temporal:" { print $12 }' "$OUT/cpu-1x1-$i.txt")
    jq -r --arg i "$i" --arg floor "$floor" --arg own "$own" --arg t "$tf, $ts s" --arg h "$hf, $hs" --arg f "$fetches" 'select(.step > 0) |
      "| \($i) | \($floor) /s | \(.fill_rate_per_s) /s | \((.fill_rate_per_s / ($floor | tonumber) * 100 | round) / 100) | \(.post_p99_ms) ms | \(.statements_per_service) / \(.transactions_per_service) | \($h) | \($f) | \($own) | \($t) | \(.load) |"' "$OUT/scale-1x1-$i.jsonl"
  done
  echo
  cat "$OUT"/cpu-*.txt
  exit 0
fi

if [ "$SCENARIO" = floor ]; then
  echo
  echo "prodbench floor: $N workflows of a service's shape, Temporal alone ($(nproc) cores; $OUT):"
  echo
  echo "| ProvisioningStatus upserts | fill rate | starts answered | start p50 | start p99 | start -> ready p50 (in the burst) | delete rate | errors | prodbench CPU | load average |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  jq -r '"| \(.status_upserts) | \(.fill_rate_per_s) /s | \(.starts_per_s) /s | \(.start_p50_ms) ms | \(.start_p99_ms) ms | \(.start_ready_p50_ms) ms | \(.delete_rate_per_s) /s | \(.start_errors + .signal_errors) | \(.cpu_s) s | \(.load) |"' "$OUT/floor.jsonl"
  echo
  cat "$OUT/cpu-floor.txt"
  exit 0
fi

if [ "$SCENARIO" = polls ]; then
  echo
  echo "svcbridge bench --scenario polls --n $N against one api, production topology ($(nproc) cores; $OUT):"
  echo
  echo "| setup | /healthz | changes | router 304 | changes / /healthz | 304 / /healthz | api CPU per request: /healthz, changes, 304 | errors | load average |"
  echo "|---|---|---|---|---|---|---|---|---|"
  cat "$OUT"/polls-*.jsonl | jq -r '"| \(.setup) | \(.healthz_per_s) /s | \(.changes_per_s) /s | \(.router_304_per_s) /s | \(.changes_ratio) | \(.router_304_ratio) | \(.healthz_server_cpu_us), \(.changes_server_cpu_us), \(.router_304_server_cpu_us) µs | \(.errors) | \(.load) |"'
  exit 0
fi

echo
echo "svcbridge bench --scenario scale --n $N --steps $STEPS, production topology ($(nproc) cores; $OUT):"
echo
echo "| setup | services | fill rate | create -> ready p50 | POST p99 | GET ?limit=500 p99 | workflow task p99.9 | errors / pending | load average |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$OUT"/scale-*.jsonl | jq -r '"| \(.setup) | \(.services) | \(if .step > 0 then "\(.fill_rate_per_s) /s" else "" end) | \(.create_ready_p50_ms) ms | \(if .step > 0 then "\(.post_p99_ms) ms" else "" end) | \(if .step > 0 then "\(.get_p99_ms) ms" else "" end) | \(if .step > 0 then "\(.workflow_task_p999_ms) ms" else "" end) | \(.errors) / \(.pending) | \(.load) |"'
echo
echo "What each service of a fill cost, summed over the processes (the store's statements and"
echo "transactions; the service workflows' tasks and local activities; sticky cache misses, each a"
echo "history fetched again, per 1,000 of those tasks):"
echo
echo "| setup | services | statements | transactions | workflow tasks | local activities | cache misses / 1,000 tasks |"
echo "|---|---|---|---|---|---|---|"
cat "$OUT"/scale-*.jsonl | jq -r 'select(.step > 0) | "| \(.setup) | \(.services) | \(.statements_per_service) | \(.transactions_per_service) | \(.workflow_tasks_per_service) | \(.local_activities_per_service) | \(.sticky_cache_misses_per_1000_tasks) |"'
echo
cat "$OUT"/cpu-*.txt
