#!/usr/bin/env bash
# Stops the local cluster and removes every trace of it: `make cluster-down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/run.sh node packages/local-cluster/scripts/cluster.ts down
