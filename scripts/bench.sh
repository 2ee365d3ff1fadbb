#!/usr/bin/env bash
# Prints svcbridge's latency and throughput figures on the embedded setup
# `svcbridge dev` runs (WAL SQLite for Temporal and the store).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
go test -run '^$' -bench 'BenchmarkCreateToReady$' -benchtime "${BENCH_SEQUENTIAL:-100}x" ./systemtest/ | grep -E '^Benchmark'
go test -run '^$' -bench 'BenchmarkConcurrentCreates$' -benchtime 1x ./systemtest/ | grep -E '^Benchmark'
