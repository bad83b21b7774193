#!/usr/bin/env bash
# Builds what the kube-lease backends run, from the module in this folder, into
# fencecheck's cache folder ($FENCECHECK_CACHE, else $XDG_CACHE_HOME/fencecheck, else
# ~/.cache/fencecheck; then kube-apiserver-<version>/):
#   kube-apiserver     the apiserver this module pins (k8s.io/kubernetes)
#   kube-lease-client  the lock client (cmd/kube-lease-client: client-go leaderelection)
# Each build is kept while its inputs are the same (go.mod, go.sum, the Go version, and
# for the client its sources; NAME.stamp records them): the script then takes a second.
# From the Go module proxy; about 5 minutes and a few GB of module and build caches on a
# fresh machine. `build.sh client` builds only the client (enough for --kubeconfig).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")"
version=$(grep -oE 'k8s\.io/kubernetes v[0-9][^ ]*' go.mod | head -1 | cut -d' ' -f2)
root=${FENCECHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencecheck}
dest="$root/kube-apiserver-$version"
gover=$(go env GOVERSION)
mkdir -p "$dest"

# build NAME PACKAGE STAMP: go build PACKAGE into $dest/NAME unless NAME.stamp is STAMP.
build() {
  local name=$1 pkg=$2 stamp=$3
  if [ -x "$dest/$name" ] && [ "$(cat "$dest/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$name $version: already built in $dest"
    return
  fi
  echo "$name $version: building into $dest"
  local start
  start=$(date +%s)
  GOWORK=off go build -trimpath -o "$dest/$name.tmp" "$pkg"
  mv "$dest/$name.tmp" "$dest/$name"
  echo "$stamp" >"$dest/$name.stamp"
  echo "$name $version: built in $(($(date +%s) - start)) s"
}

# The stamps: the first 16 hex digits of the inputs' SHA-256, then the Go version
# (kubelease's TestClientBuildIsCurrent computes the client's the same way).
mod=$(cat go.mod go.sum | sha256sum | cut -c1-16)
client=$(cat go.mod go.sum cmd/kube-lease-client/*.go | sha256sum | cut -c1-16)

# The client first: it is small, and all an existing cluster (--kubeconfig) needs.
build kube-lease-client ./cmd/kube-lease-client "$client $gover"
if [ "${1:-}" != client ]; then
  build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$mod $gover"
fi
