#!/usr/bin/env bash
# Stops what `make up` started and removes its state: `make down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/run.sh node packages/control-plane/scripts/control-plane.ts down
