#!/usr/bin/env bash
# The browser for the e2e tests: Debian's chromium, installed with apt-get
# when missing (Playwright's own browser downloads are not used).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "[chromium] installing Debian's chromium package" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >&2
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium >&2
/usr/bin/chromium --version >&2
