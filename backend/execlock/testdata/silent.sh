#!/bin/sh
# Reads requests and never answers.
cat >/dev/null
