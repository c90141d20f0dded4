# Pinned versions of everything built outside npm, and where it is cached.
# Sourced by the hack/ scripts; each version is set here and nowhere else.
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
HELM_VERSION=v3.19.2
NODE_VERSION=24.21.0
# KWOK's fake nodes for `make bench` at scale (hack/build-kwok.sh).
KWOK_VERSION=v0.8.0
# The local cluster's dynamic provisioner and default StorageClass (hack/build-local-path-provisioner.sh, ADR 13).
LOCAL_PATH_PROVISIONER_VERSION=v0.0.30
# The local cluster's DNS, behind the kube-dns Service (hack/build-coredns.sh).
COREDNS_VERSION=v1.15.0
# The Prometheus the API's integration tests query for the dashboard's graphs (hack/build-prometheus.sh).
PROMETHEUS_VERSION=v0.316.0

KVTS_CACHE="${KUBEVIRT_TS_CACHE:-$HOME/.cache/kubevirt-ts}"

K8S_STAGING_MODULES="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
cloud-provider cluster-bootstrap code-generator component-base component-helpers
controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission
sample-apiserver sample-cli-plugin sample-controller"

# Every version is in the name, so that changing one builds into a new folder.
k8s_bin_dir() { echo "$KVTS_CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION"; }

# A module whose only purpose is to pin one Go tool at one version.
tool_module_dir() {
  local name=$1 module=$2 version=$3 dir="$KVTS_CACHE/src/$1-$3"
  if [ ! -f "$dir/go.mod" ]; then
    mkdir -p "$dir"
    printf 'module kubevirt-ts.local/%sbuild\ngo 1.24\nrequire %s %s\n' "$name" "$module" "$version" >"$dir/go.mod.tmp"
    mv "$dir/go.mod.tmp" "$dir/go.mod"
  fi
  echo "$dir"
}

# Builds one Go command of a module once into $KVTS_CACHE/bin/<name>-<version>/<name>, under a lock, with
# progress on stderr; prints nothing. Args: name, module, version, package.
build_go_tool() {
  local name=$1 module=$2 version=$3 pkg=$4 bin_dir="$KVTS_CACHE/bin/$1-$3"
  local out="$bin_dir/$name"
  mkdir -p "$bin_dir"
  (
    flock 9
    if [ ! -x "$out" ]; then
      echo "[build-$name] $name $version: building (a cold build takes minutes)" >&2
      local dir
      dir=$(tool_module_dir "$name" "$module" "$version")
      (cd "$dir" && GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial" "$pkg") >&2 \
        || { echo "[build-$name] $name: build failed (see the messages above)" >&2; exit 1; }
      mv "$out.partial" "$out"
      echo "[build-$name] $name: done" >&2
    fi
  ) 9>"$bin_dir/.lock"
}
