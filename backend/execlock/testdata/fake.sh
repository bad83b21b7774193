#!/bin/sh
# A fake lock client that grants every acquire at once with a growing token (no real
# lock: for tests of the protocol plumbing only). SLOW=seconds delays every answer;
# BREAK_AFTER=N makes it misbehave at request N+1: BREAK_WITH=garbage prints a line that
# is not JSON, BREAK_WITH=exit exits with status 5. NO_TOKEN=why grants with "no_token"
# instead of a token; SWITCH_AFTER=N switches between the two after N grants. LOSE=reason
# reports every grant with a token lost as it grants it ({"event":"lost","reason":...}).
# LIBRARY=words names the client's lock library in every grant ("library").
n=0
seen=0
while read -r line; do
  seen=$((seen + 1))
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  if [ -n "${BREAK_AFTER:-}" ] && [ "$seen" -gt "$BREAK_AFTER" ]; then
    case "${BREAK_WITH:-garbage}" in
    exit) echo "fake client: exiting on purpose" >&2; exit 5 ;;
    *) echo "oops, not JSON" ;;
    esac
    cat >/dev/null
    exit 0
  fi
  [ -n "${SLOW:-}" ] && sleep "$SLOW"
  case "$line" in
  *'"acquire"'*)
    n=$((n + 1))
    tokenless=${NO_TOKEN:+yes}
    if [ -n "${SWITCH_AFTER:-}" ] && [ "$n" -gt "$SWITCH_AFTER" ]; then
      tokenless=$([ -n "$tokenless" ] || echo yes)
    fi
    if [ -n "$tokenless" ]; then
      printf '{"id":%s,"ok":true,"no_token":"%s"}\n' "$id" "${NO_TOKEN:-a fake lock}"
    elif [ -n "${LOSE:-}" ]; then
      # One write: the event is in the pipe with the grant, before any SIGSTOP can land.
      printf '{"id":%s,"ok":true,"token":%s}\n{"event":"lost","reason":"%s"}\n' "$id" "$n" "$LOSE"
    elif [ -n "${LIBRARY:-}" ]; then
      printf '{"id":%s,"ok":true,"token":%s,"library":"%s"}\n' "$id" "$n" "$LIBRARY"
    else
      printf '{"id":%s,"ok":true,"token":%s}\n' "$id" "$n"
    fi
    ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
