#!/bin/sh
# A fake lock client that refuses every acquire, definitely ("ok":false, "definite":true),
# with REASON (default: a refused connection) and answers every other request: a client
# that cannot reach its lock service, so a run with it is granted nothing.
reason=${REASON:-dial tcp 127.0.0.1:1: connect: connection refused}
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
  *'"acquire"'*) printf '{"id":%s,"ok":false,"definite":true,"error":"%s"}\n' "$id" "$reason" ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
