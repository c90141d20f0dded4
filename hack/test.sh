#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `make test`. CI runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

step "Node 24 and npm packages"
hack/run.sh node --version

step "Kubernetes binaries (built from Go modules once, then cached)"
hack/build-k8s.sh etcd kube-apiserver kubectl >/dev/null

step "lint, typecheck and unit tests"
hack/run.sh npx turbo run lint typecheck test --output-logs=errors-only

step "integration tests against a real etcd and kube-apiserver"
hack/run.sh npx turbo run test:integration --concurrency=1 --output-logs=full

step "end-to-end tests of the dashboard in Chromium"
hack/ensure-chromium.sh
hack/run.sh npx turbo run e2e --output-logs=full

step "all tests passed"
