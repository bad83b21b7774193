#!/bin/sh
# Grants with token 0, which a history reserves for "no token".
read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"ok":true,"token":0}\n' "$id"
cat >/dev/null
