#!/usr/bin/env bash
# A fresh cluster on this machine: `make cluster-up` (one node), `make cluster-up NODES=2` (two).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/ensure-host-packages.sh
bin_dir=$(hack/build-k8s.sh etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy helm)
provisioner=$(hack/build-local-path-provisioner.sh)
coredns=$(hack/build-coredns.sh)
hack/run.sh node packages/local-cluster/scripts/cluster.ts up "$bin_dir" "$provisioner" "$coredns" "${NODES:-1}"
