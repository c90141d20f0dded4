#!/usr/bin/env bash
# Builds Prometheus (github.com/prometheus/prometheus, its server) from its Go
# module and caches it by version outside the work tree, as hack/build-kwok.sh
# does for KWOK. The API's integration tests run it for the dashboard's graphs
# from Prometheus (metrics.prometheusUrl). Without the builtinassets tag it
# has no web UI, which nothing here needs: only its HTTP API is asked.
# Logs go to stderr; stdout carries one line, the binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

build_go_tool prometheus github.com/prometheus/prometheus "$PROMETHEUS_VERSION" github.com/prometheus/prometheus/cmd/prometheus
echo "$KVTS_CACHE/bin/prometheus-$PROMETHEUS_VERSION/prometheus"
