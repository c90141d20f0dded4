#!/usr/bin/env bash
# kubectl against the local system that `make up` started, as in KubeVirt's
# cluster-up/kubectl.sh: cluster-up/kubectl.sh get vms -A
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kubeconfig="$root/.local/kubeconfig"
[ -f "$kubeconfig" ] || { echo "no local system: run \`make up\` first" >&2; exit 1; }
bin_dir=$("$root/hack/build-k8s.sh" kubectl 2>/dev/null)
exec "$bin_dir/kubectl" --kubeconfig="$kubeconfig" "$@"
