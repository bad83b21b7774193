#!/bin/sh
# Where a test pass's time goes, from `go test -json` output:
#   go test -json -count=1 ./... > /tmp/pass.json; sh docs/testtimes.sh /tmp/pass.json [N]
# prints the N (default 10) longest packages, the N longest top-level tests and the N
# longest subtests, wall seconds as go test reports them (Elapsed), and what failed.
set -eu
f=${1:?usage: testtimes.sh PASS.json [N]}
n=${2:-10}
short='sub("github.com/fencecheck/fencecheck/?"; "") | if . == "" then "." else . end'
echo "== packages (wall s)"
jq -r "select((.Action == \"pass\" or .Action == \"fail\") and .Test == null) | \"\(.Elapsed)\t\(.Action)\t\(.Package | $short)\"" "$f" | sort -rn | head -n "$n"
echo "== top-level tests (wall s)"
jq -r "select((.Action == \"pass\" or .Action == \"fail\") and .Test != null and (.Test | contains(\"/\") | not)) | \"\(.Elapsed)\t\(.Package | $short)\t\(.Test)\"" "$f" | sort -rn | head -n "$n"
echo "== subtests (wall s)"
jq -r "select((.Action == \"pass\" or .Action == \"fail\") and .Test != null and (.Test | contains(\"/\"))) | \"\(.Elapsed)\t\(.Package | $short)\t\(.Test)\"" "$f" | sort -rn | head -n "$n"
echo "== catalogue (TestCatalogue's runs: how many, their wall seconds summed)"
jq -r 'select(.Action == "pass" or .Action == "fail") | select(.Test != null and (.Test | startswith("TestCatalogue/"))) | .Elapsed' "$f" | awk '{ s += $1; n++ } END { printf "%d runs, %.0f s\n", n, s }'
echo "== failed"
jq -r 'select(.Action == "fail" and .Test != null) | "\(.Package | '"$short"')\t\(.Test)"' "$f"
