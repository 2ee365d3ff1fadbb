#!/usr/bin/env bash
# Prints svcbridge's figures through real skupper routers (meshtest's
# benchmarks; docs/performance.md, "Through real routers"): create -> first
# byte echoed at a tagged edge agent, tag edit -> the new agent's first
# byte, and throughput through a hub listener and an edge connector beside
# a direct TCP connection. Needs root (network namespaces) and skrouterd
# (../shared/router/build.sh, or SKROUTERD).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
go test -run '^$' -bench 'BenchmarkMesh' -benchtime 1x -timeout 30m ./meshtest/ | grep -E '^Benchmark'
