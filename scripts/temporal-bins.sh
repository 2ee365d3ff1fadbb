#!/usr/bin/env bash
# Builds the Temporal server (temporal-server) and its schema tool
# (temporal-sql-tool) that systemtest's production rehearsal
# (TestComposeRehearsal) runs, at the version of the temporalio/server image
# docker-compose.yml runs (not go.mod's: the rehearsal is of the Compose
# file), into ${SVCBRIDGE_TEMPORAL_BIN:-$HOME/.cache/svcbridge/temporal-bin}/v<version>.
# These are the binaries the temporalio/server and temporalio/admin-tools
# images ship (docker/targets/*.Dockerfile in the server module), built from
# the Go module proxy in a throwaway module outside the repo: svcbridge's
# go.mod does not require the CLI libraries the commands import, and should
# not. Beside them, schema/ is the module's schema directory, which the
# admin-tools image holds as /etc/temporal/schema. Each part is made only
# when missing; with all present this returns at once. The last line
# printed on stdout is the directory.
#
# Usage: scripts/temporal-bins.sh
#        BIN=$(scripts/temporal-bins.sh | tail -n 1)
# Cold build: 4 to 8 minutes on 2 cores (the server tree), later ones reuse
# the Go build cache. See shared/docs/temporal.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

IMAGE_TAG=$(sed -n 's/^[[:space:]]*image:[[:space:]]*temporalio\/server:\([0-9][0-9.]*\)[[:space:]]*$/\1/p' docker-compose.yml)
if [ -z "$IMAGE_TAG" ]; then
  echo "temporal-bins: no temporalio/server:X.Y.Z image in docker-compose.yml" >&2
  exit 1
fi
VERSION=v$IMAGE_TAG
BIN=${SVCBRIDGE_TEMPORAL_BIN:-$HOME/.cache/svcbridge/temporal-bin}/$VERSION
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)

log() { echo "temporal-bins: $*" >&2; }

# Whether a binary runs and reports the version wanted (read whole first:
# see kube-bins.sh on grep -q and SIGPIPE).
reports() {
  local out
  [ -x "$1" ] && out=$("$1" --version 2>/dev/null) && grep -q "version ${VERSION#v}\$" <<<"$out"
}

WORK=""
cleanup() { if [ -n "$WORK" ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

# build NAME PACKAGE: one binary of the server module at VERSION.
build() {
  local name=$1 pkg=$2 start=$SECONDS
  if [ -z "$WORK" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/svcbridge-temporal-bins.XXXXXX")
    printf 'module svcbridge.local/temporal-build\n\ngo 1.26\n\nrequire go.temporal.io/server %s\n' "$VERSION" >"$WORK/go.mod"
  fi
  log "building $name $VERSION ($pkg) in $WORK"
  (
    cd "$WORK"
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$WORK/$name" "$pkg"
  )
  mv -f "$WORK/$name" "$BIN/$name"
  log "$name built in $((SECONDS - start)) s"
}

reports "$BIN/temporal-server" || build temporal-server go.temporal.io/server/cmd/server
reports "$BIN/temporal-sql-tool" || build temporal-sql-tool go.temporal.io/server/cmd/tools/sql

if [ ! -d "$BIN/schema/postgresql" ]; then
  dir=$(go mod download -json "go.temporal.io/server@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  rm -rf "$BIN/schema.tmp" && cp -R "$dir/schema" "$BIN/schema.tmp" && chmod -R u+w "$BIN/schema.tmp" && mv "$BIN/schema.tmp" "$BIN/schema"
fi

[ -d "$BIN/schema/postgresql" ] || { log "$BIN/schema holds no PostgreSQL schema"; exit 1; }
for b in temporal-server temporal-sql-tool; do
  reports "$BIN/$b" || { log "$BIN/$b does not report $VERSION"; exit 1; }
done
echo "$BIN"
