#!/usr/bin/env bash
# Builds rancher's local-path-provisioner from its Go module and caches it by
# version outside the work tree: the local cluster's dynamic provisioner and
# default StorageClass (ADR 13). cluster-up runs it as a host process.
# Logs go to stderr; stdout carries one line, the binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

build_go_tool local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_PROVISIONER_VERSION" github.com/rancher/local-path-provisioner
echo "$KVTS_CACHE/bin/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION/local-path-provisioner"
