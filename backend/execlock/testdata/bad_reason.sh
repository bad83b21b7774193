#!/bin/sh
# Sends a lost event whose reason is not a string on its first request.
read -r line
echo '{"event":"lost","reason":5}'
cat >/dev/null
