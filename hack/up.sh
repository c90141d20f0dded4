#!/usr/bin/env bash
# Sets everything up on a fresh machine and starts the system: `make up`.
# A local Kubernetes cluster (one node; NODES=2 for two), kubevirt-ts built and
# installed into it with its Helm chart; prints where the dashboard is and how to sign in.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/cluster-up.sh
hack/cluster-sync.sh
kubectl=cluster-up/kubectl.sh
$kubectl apply -f cluster-up/users.yaml >/dev/null
admin_token=$($kubectl -n default create token kubevirt-ts-admin --duration=24h)
viewer_token=$($kubectl -n default create token kubevirt-ts-viewer --duration=24h)
cat <<MSG

kubevirt-ts is running on a local cluster of ${NODES:-1} node(s).

  Dashboard:   https://198.18.255.1:30080
               (its certificate is self-signed by the chart; your browser asks you to accept it once,
               or trust it: $kubectl -n kubevirt-ts get secret kubevirt-ts-web-tls -o jsonpath='{.data.tls\.crt}' | base64 -d)
  Sign in as an admin with this token (valid 24 hours):
    $admin_token
  or as a view-only user:
    $viewer_token
  New tokens: cluster-up/kubectl.sh -n default create token kubevirt-ts-admin

  A first VM:  cluster-up/kubectl.sh apply -f examples/vm-debian.yaml
               (Debian 12; in the dashboard's Console tab log in as demo, password kubevirt-ts),
               or "Create VM" in the dashboard.
  kubectl:     cluster-up/kubectl.sh get vms -A      (or export KUBECONFIG=$PWD/.local/kubeconfig)
  Logs:        .local/logs/ (one file per cluster component)
  Stop:        make down
MSG
