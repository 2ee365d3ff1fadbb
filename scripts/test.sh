#!/usr/bin/env bash
# Runs svcbridge's whole test suite on real parts: PostgreSQL (started, or
# installed with apt when missing), the in-process Temporal server, SQLite,
# real skupper routers in network namespaces.
# Usage: scripts/test.sh            (everything, as CI runs it)
#        FUZZTIME=0 scripts/test.sh (skip the bounded fuzzing)
#        FUZZTIME=20000x scripts/test.sh (another budget for every target)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
FUZZTIME=${FUZZTIME:-}

ensure_postgres() {
  if [ -n "${SVCBRIDGE_TEST_POSTGRES:-}" ]; then return; fi
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return; fi
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "== installing PostgreSQL (apt)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  local ver
  ver=$(ls /etc/postgresql | sort -V | tail -n 1)
  if [ -z "$(pg_lsclusters -h 2>/dev/null | awk '$2=="main"')" ]; then
    pg_createcluster "$ver" main >/dev/null
  fi
  # Tests connect as postgres over TCP without a password.
  local hba="/etc/postgresql/$ver/main/pg_hba.conf"
  if ! grep -qE '^host\s+all\s+all\s+127.0.0.1/32\s+trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  fi
  echo "== starting PostgreSQL $ver"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return; sleep 1; done
  echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2
  exit 1
}

# Debian's Chromium for the browser test of the Temporal Web UI
# (systemtest's TestWebUI).
ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  echo "== installing Chromium (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}

# Debian's Prometheus for the alert rules' unit tests (promtool, deploy's
# TestAlertRuleUnitTests) and the scrape of a running svcbridge
# (systemtest's TestPrometheus*). About 40 MB; the package's own service
# does not start where there is no init system, and the tests run their own.
ensure_prometheus() {
  if [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; then return; fi
  echo "== installing Prometheus (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
}

# A real skupper router (skrouterd 3.5.1) for the router side's tests
# (routersync, meshtest): built from its sources by the workplace's
# router/build.sh (found beside the checkout, or at SKROUTERD_SOURCES)
# into ~/.cache/skrouterd/3.5.1 once per machine (3-5 minutes cold, a few
# ms once built). It prints the binary's path last.
ensure_router() {
  local built="${SKROUTERD_PREFIX:-$HOME/.cache/skrouterd/3.5.1}/sbin/skrouterd"
  local dir
  for dir in "${SKROUTERD_SOURCES:-}" "$PWD/../shared/router" /work/shared/router; do
    if [ -n "$dir" ] && [ -x "$dir/build.sh" ]; then
      # cmake leaves files in the working directory: not in the checkout.
      (cd "$(mktemp -d)" && "$dir/build.sh") | tail -n 1
      return
    fi
  done
  if [ -x "$built" ]; then echo "$built"; return; fi
  echo "no skupper router sources (router/build.sh): set SKROUTERD_SOURCES" >&2
  return 1
}

ensure_postgres
# On a fresh machine apt (network and dpkg) and the router's C build run
# beside the Go builds below; a failure of either fails the run at its
# wait. The router's build.sh installs its own packages with apt: it runs
# after this script's installs, as two apt-gets at once fail on dpkg's
# lock.
(
  ensure_chromium
  ensure_prometheus
  ensure_router >"${TMPDIR:-/tmp}/svcbridge-skrouterd.path"
) &
apt_pid=$!

# The Temporal server and temporal-sql-tool of docker-compose.yml's release
# for systemtest's production rehearsal, and a real kube-apiserver and etcd
# for the Kubernetes tests: built once per machine from the Go module proxy,
# cached outside the repo. The two builds overlap each other's downloads
# and links.
echo "== Temporal binaries for the Compose rehearsal, kube-apiserver and etcd for envtest"
scripts/temporal-bins.sh >/dev/null &
temporal_pid=$!
KUBEBUILDER_ASSETS=$(scripts/kube-bins.sh | tail -n 1)
export KUBEBUILDER_ASSETS
wait "$temporal_pid"
wait "$apt_pid"
SKROUTERD=$(cat "${TMPDIR:-/tmp}/svcbridge-skrouterd.path")
export SKROUTERD

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 30m ./...

# A shared PostgreSQL has other clients: the store and API suites again
# with 60 of its 100 connections held by others (too many clients is a
# transient error the store retries, never a failure).
echo "== go test on a crowded PostgreSQL"
scripts/crowded-postgres.sh 60 ./store/ ./api/

echo "== go test -race (packages with concurrency)"
go test -count=1 -race -timeout 30m ./store/... ./activities/ ./api/ ./routerconfig/ ./routersync/ ./service/ ./workflows/ ./worker/ ./cli/

# Budgets are counts of inputs, not durations: Go 1.26's fuzz coordinator
# can fail a target with "context deadline exceeded" when a duration ends
# while a slow input (FuzzRequests goes through PostgreSQL) is in flight
# (go.dev/issue/75804). Each count is about 10 s on this machine.
if [ "$FUZZTIME" != "0" ]; then
  echo "== fuzzing the request decoders and handlers"
  for target in document:FuzzYAMLValues:30000x service:FuzzDecodeJSON:50000x service:FuzzDecodeYAML:50000x api:FuzzRequests:4000x; do
    IFS=: read -r pkg name budget <<<"$target"
    go test -run '^$' -fuzz "^$name\$" -fuzztime "${FUZZTIME:-$budget}" "./$pkg/"
  done
fi
