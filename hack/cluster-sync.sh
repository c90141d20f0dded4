#!/usr/bin/env bash
# Builds the project and its images and installs the chart into the local
# cluster: `make cluster-sync`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin_dir=$(hack/build-k8s.sh kubectl helm)
hack/run.sh npx turbo run build --output-logs=errors-only
hack/run.sh node packages/local-cluster/scripts/cluster.ts sync "$bin_dir"
