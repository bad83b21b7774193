#!/bin/sh
# Reads its first request, then gives up.
read -r line
echo "cannot connect to the lock service, giving up" >&2
exit 4
