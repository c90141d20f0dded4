#!/usr/bin/env bash
# Installs the Debian packages the local cluster and the image builds need,
# when missing: containerd, runc, the CNI plugins, iptables, mmdebstrap, gcc.
set -euo pipefail
packages=(containerd runc containernetworking-plugins iptables conntrack mmdebstrap gcc libc6-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[host] installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
