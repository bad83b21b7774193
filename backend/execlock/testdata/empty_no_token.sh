#!/bin/sh
# Grants with an empty "no_token": it must say why.
read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"id":%s,"ok":true,"no_token":""}\n' "$id"
cat >/dev/null
