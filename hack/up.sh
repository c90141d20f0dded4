#!/usr/bin/env bash
# Sets everything up on a fresh machine and starts the system: `make up`.
# Today that is the control plane (etcd and kube-apiserver on 127.0.0.1:6443)
# with the kubevirt.io CRDs installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/build-k8s.sh etcd kube-apiserver kubectl >/dev/null
hack/run.sh node packages/control-plane/scripts/control-plane.ts up
