#!/bin/sh
# perf.sh re-takes the table of docs/performance.md: it generates the histories (the
# built-in shape and the realistic one, 100k, 1M and 20M ops, held and with one
# accepted stale write near the end), checks each RUNS times with `fencecheck check
# --json` under /usr/bin/time, and runs plain porcupine (10 s per property) on the
# 100k files. It prints one Markdown row per file and tool; the exit column is the
# tool's (fencecheck: 1 when register or updates is violated; plainporcupine: 1 when a
# property is not linearizable, 3 when porcupine gave no answer on one).
#
#	sh models/internal/histgen/perf.sh [DIR]      # from the repository root
#
# DIR (default /tmp/fencecheck-perf) keeps the binaries and the histories (about 16 GB
# at 20M ops; SIZES="100000 1000000" leaves those out); RUNS (default 3) sets the runs
# per file. Run it on a quiet machine: wall time is what it is for.
set -eu
DIR=${1:-/tmp/fencecheck-perf}
RUNS=${RUNS:-3}
SIZES=${SIZES:-"100000 1000000 20000000"}
mkdir -p "$DIR"
go build -o "$DIR/fencecheck" ./cmd/fencecheck
go build -o "$DIR/genhistory" ./models/internal/histgen/genhistory
go build -o "$DIR/plainporcupine" ./models/internal/plainporcupine

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)"
echo
echo "| history | ops | tool | exit | wall (s), each run | CPU user+sys (s), each run | max RSS (MB) |"
echo "|---|---|---|---|---|---|---|"

# measure NAME OPS TOOL CMD...: RUNS runs of CMD under /usr/bin/time.
measure() {
	name=$1 ops=$2 tool=$3
	shift 3
	walls="" cpus="" rss=0 code=0
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		set +e
		/usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" "$@" >"$DIR/out.txt" 2>"$DIR/err.txt"
		code=$?
		set -e
		read -r wall user sys kb <<EOT
$(tail -n 1 "$DIR/time.txt")
EOT
		walls="$walls${walls:+ / }$wall"
		cpus="$cpus${cpus:+ / }$(echo "$user $sys" | awk '{printf "%.2f", $1 + $2}')"
		mb=$((kb / 1024))
		[ "$mb" -gt "$rss" ] && rss=$mb
		i=$((i + 1))
	done
	echo "| $name | $ops | $tool | $code | $walls | $cpus | $rss |"
}

for ops in $SIZES; do
	for shape in builtin realistic; do
		flags=""
		[ "$shape" = realistic ] && flags="-realistic"
		for kind in held stale; do
			name="$shape-$ops-$kind"
			file="$DIR/$name.json"
			extra=""
			[ "$kind" = stale ] && extra="-stale-at 0.999"
			# shellcheck disable=SC2086 # the flags are words
			[ -f "$file" ] || "$DIR/genhistory" -ops "$ops" $flags $extra -o "$file"
			measure "$name" "$ops" "fencecheck check --json" "$DIR/fencecheck" check --json "$file"
			if [ "$ops" -le 100000 ]; then
				measure "$name" "$ops" "plainporcupine -timeout 10s" "$DIR/plainporcupine" -timeout 10s "$file"
			fi
		done
	done
done
