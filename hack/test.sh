#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `make test`. CI runs exactly this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$(date +%s)
# Where the suites reach the dashboard (and through it the API and consoles), as `make up` prints it.
export KUBEVIRT_TS_DASHBOARD_URL=https://198.18.255.1:30080
# Each failed test, a line (e2e/failure-list.ts), printed again at the very end
# when the suite fails: the end of a CI log is often all that is kept of it.
export KUBEVIRT_TS_FAILURES="${TMPDIR:-/tmp}/kubevirt-ts-failures.$$"
rm -f "$KUBEVIRT_TS_FAILURES"
failures() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -s "$KUBEVIRT_TS_FAILURES" ]; then
    printf '\n== the tests that failed\n'
    cat "$KUBEVIRT_TS_FAILURES"
  fi
  rm -f "$KUBEVIRT_TS_FAILURES"
  return "$rc"
}
trap failures EXIT
step() { printf '\n== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

step "Node 24 and npm packages"
hack/run.sh node --version

step "Kubernetes binaries (built from Go modules once, then cached)"
hack/build-k8s.sh etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy helm >/dev/null

step "Prometheus and promtool, for the graphs' and the alerts' tests (built from its Go module once, then cached)"
hack/build-prometheus.sh >/dev/null
hack/build-promtool.sh >/dev/null

step "lint, typecheck and unit tests"
# The code as the formatter lays it out (npm run format), then each package's lint, typecheck and unit tests.
hack/run.sh npx prettier --check . --log-level warn
# At most three at once: more only slices two cores finer, and stretches the timing of every test.
hack/run.sh npx turbo run lint typecheck test lint:workspaces typecheck:workspaces --concurrency=3 --output-logs=errors-only

step "integration tests against a real etcd and kube-apiserver; meanwhile a fresh two-node local cluster, and kubevirt-ts built, imaged and installed into it with Helm"
# The integration tests leave much of two cores idle (each waits on its own API server, etcd or QEMU): two packages
# run at once, and the cluster comes up beside them. Its log is printed once the tests are done.
cluster_log="${TMPDIR:-/tmp}/kubevirt-ts-cluster-up.$$"
(NODES=2 hack/cluster-up.sh && hack/cluster-sync.sh) >"$cluster_log" 2>&1 &
cluster_pid=$!
integration=0
hack/run.sh npx turbo run test:integration --concurrency=2 --output-logs=errors-only || integration=$?
cluster=0
wait "$cluster_pid" || cluster=$?
step "the local cluster's log"
cat "$cluster_log"
rm -f "$cluster_log"
if [ "$integration" -ne 0 ] || [ "$cluster" -ne 0 ]; then
  echo "integration tests: exit $integration; local cluster and chart: exit $cluster" >&2
  exit 1
fi

step "end-to-end: the system on the cluster"
hack/run.sh npx turbo run e2e:cluster --output-logs=full

step "end-to-end: the dashboard on the cluster, in Chromium"
hack/ensure-chromium.sh
hack/run.sh npx turbo run e2e --output-logs=full

step "chaos: every component killed under load, one at a time"
hack/run.sh npx turbo run e2e:chaos --output-logs=full

step "all tests passed; the cluster stays up (make down removes it)"
