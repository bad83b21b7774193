#!/bin/sh
# Grants with a token and "no_token" at once.
read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"ok":true,"token":3,"no_token":"none really"}\n' "$id"
cat >/dev/null
