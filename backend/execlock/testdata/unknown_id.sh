#!/bin/sh
# Answers an id fencecheck never sent.
read -r line
echo '{"id":99,"ok":true,"token":7}'
cat >/dev/null
