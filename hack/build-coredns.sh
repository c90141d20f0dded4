#!/usr/bin/env bash
# Builds CoreDNS from its Go module and caches it by version outside the work
# tree: the local cluster's DNS (cluster-up runs it as a host process behind
# the kube-dns Service, as a cluster's DNS add-on serves). Logs go to stderr;
# stdout carries one line, the binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

build_go_tool coredns github.com/coredns/coredns "$COREDNS_VERSION" github.com/coredns/coredns
echo "$KVTS_CACHE/bin/coredns-$COREDNS_VERSION/coredns"
