#!/bin/sh
# Grants with a token that is a string, not a JSON integer.
read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"ok":true,"token":"42"}\n' "$id"
cat >/dev/null
