#!/usr/bin/env bash
# Builds Kubernetes and etcd binaries from Go modules and caches them by
# version outside the work tree. Idempotent and safe to interrupt: each binary
# is written to a temporary name and moved into place only when complete.
#
#   hack/build-k8s.sh [component ...]
#
# Components: etcd kube-apiserver kubectl kube-controller-manager
# kube-scheduler kubelet kube-proxy helm. Default: the three the
# integration tests need (etcd kube-apiserver kubectl).
# Logs go to stderr; stdout carries one line, the folder holding the binaries.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kubectl)

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
bin_dir="$(k8s_bin_dir)"
mkdir -p "$bin_dir"
exec 9>"$bin_dir/.lock"
flock 9

log() { printf '[build-k8s] %s\n' "$*" >&2; }

# Prints a line every 25 packages compiled so that a long cold build shows
# it is progressing without flooding the log.
progress() {
  local name=$1 n=0
  while IFS= read -r line; do
    case "$line" in
      # `go build -v` names each package it compiles; anything with a space is a message.
      *" "*) printf '%s\n' "$line" >&2 ;;
      *) n=$((n + 1)); [ $((n % 25)) -eq 0 ] && log "$name: $n packages compiled" ;;
    esac
  done
  log "$name: $n packages compiled"
}

# A wrapper module: upstream's go.mod replaces its staging modules with local
# paths, so each staging module is pinned to its published v0 version here.
k8s_module_dir() {
  local dir="$KVTS_CACHE/src/k8s-$K8S_VERSION"
  if [ ! -f "$dir/go.mod" ]; then
    mkdir -p "$dir"
    local tmp="$dir/go.mod.tmp" staging_version="v0.${K8S_VERSION#v1.}"
    {
      echo "module kubevirt-ts.local/k8sbuild"
      echo "go 1.24"
      echo "require k8s.io/kubernetes $K8S_VERSION"
      for m in $K8S_STAGING_MODULES; do
        echo "replace k8s.io/$m => k8s.io/$m $staging_version"
      done
    } >"$tmp"
    mv "$tmp" "$dir/go.mod"
  fi
  echo "$dir"
}

etcd_module_dir() {
  local dir="$KVTS_CACHE/src/etcd-$ETCD_VERSION"
  if [ ! -f "$dir/go.mod" ]; then
    mkdir -p "$dir"
    printf 'module kubevirt-ts.local/etcdbuild\ngo 1.24\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$dir/go.mod.tmp"
    mv "$dir/go.mod.tmp" "$dir/go.mod"
  fi
  echo "$dir"
}

k8s_ldflags() {
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.buildDate=$date"
  done
  echo "$flags"
}

build() {
  local name=$1 dir=$2 pkg=$3 cgo=$4 ldflags=$5
  local out="$bin_dir/$name"
  if [ -x "$out" ]; then
    log "$name: cached at $out"
    return
  fi
  log "$name: building $pkg (cold builds take minutes; progress follows)"
  local status=0
  (cd "$dir" && CGO_ENABLED=$cgo go build -v -trimpath -tags selinux,notest \
    -ldflags "$ldflags" -o "$out.partial" "$pkg" 2>&1) | progress "$name" || status=$?
  [ "$status" -eq 0 ] || { log "$name: build failed (see the messages above)"; exit 1; }
  mv "$out.partial" "$out"
  log "$name: done"
}

for c in "${components[@]}"; do
  case "$c" in
    etcd) build etcd "$(etcd_module_dir)" go.etcd.io/etcd/server/v3 0 "-s -w" ;;
    kubelet) build kubelet "$(k8s_module_dir)" k8s.io/kubernetes/cmd/kubelet 1 "$(k8s_ldflags)" ;;
    kube-apiserver|kubectl|kube-controller-manager|kube-scheduler|kube-proxy)
      build "$c" "$(k8s_module_dir)" "k8s.io/kubernetes/cmd/$c" 0 "$(k8s_ldflags)" ;;
    helm) build helm "$(tool_module_dir helm helm.sh/helm/v3 "$HELM_VERSION")" helm.sh/helm/v3/cmd/helm 0 "-s -w" ;;
    *) log "unknown component: $c"; exit 2 ;;
  esac
done

echo "$bin_dir"
