#!/usr/bin/env bash
# Builds the kube-apiserver this module pins into fencecheck's cache folder, where the
# kube-lease backend finds it ($FENCECHECK_CACHE, else $XDG_CACHE_HOME/fencecheck, else
# ~/.cache/fencecheck; then kube-apiserver-<version>/). A build already there for the
# same go.mod, go.sum and Go version is kept: the script then takes a second.
# From the Go module proxy; about 5 minutes and a few GB of module and build caches on a
# fresh machine.
set -euo pipefail
cd "$(dirname "$0")"
version=$(grep -oE 'k8s\.io/kubernetes v[0-9][^ ]*' go.mod | head -1 | cut -d' ' -f2)
root=${FENCECHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencecheck}
dest="$root/kube-apiserver-$version"
stamp="$(cat go.mod go.sum | sha256sum | cut -c1-16) $(go env GOVERSION)"
if [ -x "$dest/kube-apiserver" ] && [ "$(cat "$dest/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "kube-apiserver $version: already built in $dest"
  exit 0
fi
echo "kube-apiserver $version: building into $dest (about 5 min on a fresh machine)"
mkdir -p "$dest"
start=$(date +%s)
GOWORK=off go build -trimpath -o "$dest/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$dest/kube-apiserver.tmp" "$dest/kube-apiserver"
echo "$stamp" >"$dest/stamp"
echo "kube-apiserver $version: built in $(($(date +%s) - start)) s"
