#!/usr/bin/env bash
# Runs a command in the project's environment: Node 24 on PATH and the npm
# packages installed as package-lock.json pins them. (`npm install` rather
# than `npm ci`: npm 11 leaves other platforms' optional packages, such as
# turbo's binaries, out of the lock file, and `npm ci` then refuses it.)
#   hack/run.sh npm test
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source hack/node.sh
export TURBO_TELEMETRY_DISABLED=1 NEXT_TELEMETRY_DISABLED=1
# Where heavy builds are cached, for the TypeScript tools that build images.
export KUBEVIRT_TS_CACHE="$KVTS_CACHE"
stamp=node_modules/.kubevirt-ts-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ -n "$(find . -name package.json -not -path '*/node_modules/*' -newer "$stamp" -print -quit)" ]; then
  hack/ensure-host-packages.sh
  echo "[run] installing npm packages" >&2
  npm_install --no-fund --no-audit >&2
  touch "$stamp"
fi
exec "$@"
