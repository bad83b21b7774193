#!/bin/sh
# A fencecheck exec client in POSIX sh + curl for the naive lock server's HTTP API: the
# smallest template. Protocol: docs/exec-protocol.md. A background subshell renews the
# lease every TTL/3 and prints {"event":"lost"} when a renewal is refused; it is in the
# client's process group, so a pause (SIGSTOP) stops it too.
addr=${FENCECHECK_LOCK_ADDRS%%,*}
owner="exec-sh-c$FENCECHECK_CLIENT"
ttl=$FENCECHECK_TTL_MS
every=$(awk "BEGIN { print $ttl / 3000 }")
tries=$((ttl * 20 / 10)) # about 20 TTLs of 10 ms tries, then give up
token=
renewer=

post() { # post PATH BODY: prints the answer, empty on any failure
  curl -s -m 1 -X POST -H 'Content-Type: application/json' -d "$2" "http://$addr$1" || true
}

field() { # field NAME JSON: a number or boolean field of a flat JSON object
  printf '%s' "$2" | sed -n "s/.*\"$1\":\([a-z0-9-]*\).*/\1/p"
}

stop_renewing() {
  [ -n "$renewer" ] && kill "$renewer" 2>/dev/null
  renewer=
}

while read -r line; do
  id=$(field id "$line")
  case "$line" in
  *'"acquire"'*)
    n=0
    while :; do
      resp=$(post /acquire "{\"owner\":\"$owner\",\"ttl_ms\":$ttl}")
      if [ "$(field granted "$resp")" = true ]; then
        token=$(field token "$resp")
        (
          while sleep "$every"; do
            ok=$(field ok "$(post /renew "{\"owner\":\"$owner\",\"token\":$token,\"ttl_ms\":$ttl}")")
            if [ "$ok" = false ]; then
              echo '{"event":"lost","reason":"renewal refused"}'
              exit 0
            fi
          done
        ) &
        renewer=$!
        printf '{"id":%s,"ok":true,"token":%s}\n' "$id" "$token"
        break
      fi
      n=$((n + 1))
      if [ "$n" -ge "$tries" ]; then
        printf '{"id":%s,"ok":false,"error":"lock busy","definite":%s}\n' "$id" "$([ -n "$resp" ] && echo true || echo false)"
        break
      fi
      sleep 0.01
    done
    ;;
  *'"release"'*)
    stop_renewing
    if [ -z "$token" ]; then
      printf '{"id":%s,"ok":false,"error":"not holding the lock","definite":true}\n' "$id"
      continue
    fi
    resp=$(post /release "{\"owner\":\"$owner\",\"token\":$token}")
    token=
    case "$(field ok "$resp")" in
    true) printf '{"id":%s,"ok":true}\n' "$id" ;;
    false) printf '{"id":%s,"ok":false,"error":"the lease was already gone","definite":true}\n' "$id" ;;
    *) printf '{"id":%s,"ok":false,"error":"no answer from the lock server"}\n' "$id" ;;
    esac
    ;;
  *) printf '{"id":%s,"ok":false,"error":"unknown op","definite":true}\n' "$id" ;;
  esac
done
stop_renewing
