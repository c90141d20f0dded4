#!/usr/bin/env bash
# Builds promtool from Prometheus's Go module (the version hack/build-prometheus.sh
# builds) and caches it by version outside the work tree. The chart's tests run
# `promtool test rules` on the alerting and recording rules it ships: Prometheus's
# own rule engine over series written in the test.
# Logs go to stderr; stdout carries one line, the binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

build_go_tool promtool github.com/prometheus/prometheus "$PROMETHEUS_VERSION" github.com/prometheus/prometheus/cmd/promtool
echo "$KVTS_CACHE/bin/promtool-$PROMETHEUS_VERSION/promtool"
