#!/usr/bin/env bash
# Stops what `make up` started and removes every trace of it: `make down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/cluster-down.sh
