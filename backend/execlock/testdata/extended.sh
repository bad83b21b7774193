#!/bin/sh
# A fake client of the extensions fencecheck's own clients use (docs/exec-protocol.md):
# the first acquire is granted with valid_until_ms, then a renewed event moves it on; every
# later acquire waits for its cancel and is refused definitely. For tests of the plumbing.
n=0
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
  *'"cancel"'*)
    of=$(printf '%s' "$line" | sed 's/.*"of":\([0-9]*\).*/\1/')
    printf '{"id":%s,"ok":false,"definite":true,"error":"cancelled while the lock was held"}\n' "$of"
    ;;
  *'"acquire"'*)
    n=$((n + 1))
    if [ "$n" -eq 1 ]; then
      now=$(date +%s%3N)
      printf '{"id":%s,"ok":true,"token":1,"valid_until_ms":%s}\n' "$id" $((now + 1000))
      printf '{"event":"renewed","valid_until_ms":%s}\n' $((now + 60000))
    fi
    ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
