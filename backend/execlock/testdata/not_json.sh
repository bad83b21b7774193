#!/bin/sh
# Answers its first request with a line that is not JSON.
read -r line
echo "acquired the lock!"
cat >/dev/null
