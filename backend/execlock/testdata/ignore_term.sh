#!/bin/sh
# A working fake client that ignores SIGTERM and its closed stdin: only SIGKILL ends it.
trap '' TERM
n=0
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
  *'"acquire"'*) n=$((n + 1)); printf '{"id":%s,"ok":true,"token":%s}\n' "$id" "$n" ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
while :; do sleep 1; done
