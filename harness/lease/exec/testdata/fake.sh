#!/bin/sh
# A fake lock client that grants every acquire at once with a growing token (no real
# lock: for tests of the protocol plumbing only). SLOW=seconds delays every answer.
n=0
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  [ -n "${SLOW:-}" ] && sleep "$SLOW"
  case "$line" in
  *'"acquire"'*) n=$((n + 1)); printf '{"id":%s,"ok":true,"token":%s}\n' "$id" "$n" ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
