#!/usr/bin/env bash
# Builds the real kube-apiserver (v1.34.2) and etcd (v3.6.4) that the kube
# package's envtest integration tests run, from the Go module proxy (no
# binary downloads), into ${SVCBRIDGE_KUBE_BIN:-$HOME/.cache/svcbridge/k8s-bin}.
# Each binary is built only when missing, in a throwaway module in a temp
# directory outside the repo; with both present this returns at once.
# The last line printed on stdout is the directory (use it as KUBEBUILDER_ASSETS).
#
# Usage: scripts/kube-bins.sh            (build what is missing, print the dir)
#        BIN=$(scripts/kube-bins.sh | tail -n 1)
# Cold build of kube-apiserver: 6 to 13 minutes and ~1.7 GB of memory; etcd ~1 minute.
# See shared/docs/kube-testing.md.
set -euo pipefail
export GOTOOLCHAIN=local

K8S_VERSION=v1.34.2
K8S_STAGING_VERSION=v0.34.2
K8S_MINOR=34
ETCD_VERSION=v3.6.4

BIN=${SVCBRIDGE_KUBE_BIN:-$HOME/.cache/svcbridge/k8s-bin}
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)

log() { echo "kube-bins: $*" >&2; }

# Whether a binary runs and reports the version wanted. The output is read
# whole first: piped into grep -q, a binary still writing when grep has
# matched dies of SIGPIPE, and pipefail then reads the match as a miss.
reports() {
  local out
  [ -x "$1" ] && out=$("$1" --version 2>/dev/null) && grep -q "$2" <<<"$out"
}
have_apiserver() { reports "$BIN/kube-apiserver" "Kubernetes $K8S_VERSION"; }
have_etcd() { reports "$BIN/etcd" "etcd Version: ${ETCD_VERSION#v}"; }

WORK=""
cleanup() { if [ -n "$WORK" ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

workdir() {
  if [ -z "$WORK" ]; then WORK=$(mktemp -d "${TMPDIR:-/tmp}/svcbridge-kube-bins.XXXXXX"); fi
}

build_apiserver() {
  workdir
  local mod="$WORK/apiserver" start=$SECONDS
  mkdir -p "$mod"
  log "building kube-apiserver $K8S_VERSION (cold: 6-13 min) in $mod"
  # kubernetes' own go.mod requires its staging modules at v0.0.0 and points
  # them at ./staging with replace directives, which a dependent module
  # ignores: replace each one with the published v0.MINOR.PATCH module.
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
    log "could not download k8s.io/kubernetes@$K8S_VERSION's go.mod"
    exit 1
  fi
  local staging
  staging=$(grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk '{print $1}' | sort -u)
  if [ -z "$staging" ]; then
    log "found no k8s.io/* v0.0.0 requirements in $gomod"
    exit 1
  fi
  log "replacing $(echo "$staging" | wc -l) k8s.io staging modules with $K8S_STAGING_VERSION"
  {
    echo "module svcbridge.local/kube-apiserver-build"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $K8S_STAGING_VERSION"; done
    echo ")"
  } >"$mod/go.mod"
  (
    cd "$mod"
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$K8S_MINOR" \
      -o "$mod/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  )
  mv -f "$mod/kube-apiserver" "$BIN/kube-apiserver"
  log "kube-apiserver built in $((SECONDS - start)) s"
}

build_etcd() {
  workdir
  local mod="$WORK/etcd" start=$SECONDS
  mkdir -p "$mod"
  log "building etcd $ETCD_VERSION (about 1 min) in $mod"
  printf 'module svcbridge.local/etcd-build\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$mod/go.mod"
  (
    cd "$mod"
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
      -o "$mod/etcd" go.etcd.io/etcd/server/v3
  )
  mv -f "$mod/etcd" "$BIN/etcd"
  log "etcd built in $((SECONDS - start)) s"
}

have_etcd || build_etcd
have_apiserver || build_apiserver

have_etcd || { log "$BIN/etcd does not report $ETCD_VERSION"; exit 1; }
have_apiserver || { log "$BIN/kube-apiserver does not report $K8S_VERSION"; exit 1; }
echo "$BIN"
