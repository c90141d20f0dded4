#!/bin/sh
# Debian's Chromium in the local cluster's browser namespace (see BROWSER_NETNS
# in packages/local-cluster/src/config.ts); Playwright drives it over the pipes
# it inherits, so only its network is elsewhere.
set -eu
exec ip netns exec "${KUBEVIRT_TS_BROWSER_NETNS:?}" "${KUBEVIRT_TS_CHROMIUM:?}" "$@"
