#!/bin/sh
# Grants its first acquire naming its library with a number, not a string.
read -r line
echo '{"id":1,"ok":true,"token":1,"library":2}'
cat >/dev/null
