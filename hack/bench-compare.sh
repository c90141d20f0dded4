#!/usr/bin/env bash
# The change of every benchmark figure from the run before the last to the
# last (or between two result files): `make bench-compare`.
#   hack/bench-compare.sh [.local/bench/<before>.json .local/bench/<after>.json]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec hack/run.sh node e2e/bench/compare-runs.ts "$@"
