#!/usr/bin/env bash
# Builds KWOK (sigs.k8s.io/kwok, fake nodes and pods) from its Go module and
# caches it by version outside the work tree, as hack/build-k8s.sh does for
# Kubernetes. Only `make bench` with BENCH_KWOK=1 uses it.
# Next to the binary it writes stages.yaml: KWOK's own stages from its module
# (nodes become Ready and keep their leases; pods become Ready; deleted pods
# go), which the kwok binary needs as its --config.
# Logs go to stderr; stdout carries one line, the folder holding both.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
bin_dir="$KVTS_CACHE/bin/kwok-$KWOK_VERSION"
build_go_tool kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
stages="$bin_dir/stages.yaml"
# KWOK's pod-ready stage leaves out a running container's `started`, which a kubelet sets (true once the container
# runs, when it has no startup probe); the VMI controller hands a VMI over on it. The marker says the file has it.
marker="# kubevirt-ts: containers started"
if [ ! -f "$stages" ] || ! grep -qF "$marker" "$stages"; then
  dir=$(tool_module_dir kwok sigs.k8s.io/kwok "$KWOK_VERSION")
  module=$(cd "$dir" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$module/kustomize/stage/$f"
  done | awk -v marker="$marker" '
    NR == 1 { print marker }
    /^ *containerStatuses:/ { inContainers = 1 }
    /^ *initContainerStatuses:/ { inContainers = 0 }
    { print }
    inContainers && /^ *ready: true$/ { sub(/ready: true/, "started: true"); print }
  ' >"$stages.tmp"
  mv "$stages.tmp" "$stages"
fi
echo "$bin_dir"
