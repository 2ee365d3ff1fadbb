#!/usr/bin/env bash
# Runs Go test packages against a PostgreSQL that already has N other
# clients, as a shared server does: N idle psql sessions stay connected
# while the tests run.
# Usage: scripts/crowded-postgres.sh N PACKAGE... (e.g. 60 ./store/ ./api/)
set -euo pipefail
cd "$(dirname "$0")/.."
n=$1
shift
admin=${SVCBRIDGE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
app=svcbridge-crowd-$$
fifo=$(mktemp -u)
mkfifo "$fifo"
pids=()
trap 'exec 3>&-; kill "${pids[@]}" 2>/dev/null || true; rm -f "$fifo"' EXIT
for _ in $(seq "$n"); do
  # Each psql waits on the FIFO, its session open and idle, until this
  # script ends and closes the FIFO.
  PGAPPNAME=$app psql -q "$admin" <"$fifo" >/dev/null 2>&1 &
  pids+=($!)
done
exec 3>"$fifo"
held=0
for _ in $(seq 60); do
  held=$(psql -Atq "$admin" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app'")
  [ "$held" -ge "$n" ] && break
  sleep 1
done
if [ "$held" -lt "$n" ]; then echo "only $held of $n other clients connected" >&2; exit 1; fi
echo "== $held other clients hold PostgreSQL connections; max_connections $(psql -Atq "$admin" -c 'SHOW max_connections')"
GOTOOLCHAIN=local go test -count=1 "$@"
