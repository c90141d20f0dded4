#!/usr/bin/env bash
# The benchmark of the local cluster: `make bench` (never part of `make test`:
# tests assert behaviour, this measures time and cost). Needs the system of
# `make up`. Prints every figure with its method, keeps the run as JSON
# under .local/bench/ and as a dated table in docs/benchmarks.md, and prints
# the change against the last recorded run (again: hack/bench-compare.sh).
#   make bench                      the figures of the real node (about 20 minutes)
#   make bench BENCH_KWOK=1         and the controller at scale on KWOK's fake nodes
#   BENCH_ONLY=start-1,sse make bench    some groups only (see e2e/bench/main.ts)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${BENCH_KWOK:-0}" = 1 ]; then
  BENCH_KWOK_DIR=$(hack/build-kwok.sh)
  export BENCH_KWOK_DIR
fi
hack/ensure-chromium.sh
exec hack/run.sh node e2e/bench/main.ts
