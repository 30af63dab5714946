#!/bin/sh
# atlas-diff --ranks at scale, on synthetic rank files (bench/ranks/gen_ranks.c):
#   run_ranks_bench.sh BUILD RANKS STEPS OPS REPS
# One rank runs one extra all-reduce halfway; the run must name it (exit 1).
# The files are read once before timing, so the figure is the tool's, not
# the disk's. atlas-diff is single-threaded: CPU time is one core's.
set -eu
BUILD=$1 RANKS=$2 STEPS=$3 OPS=$4 REPS=$5
dir=$(mktemp -d "${TMPDIR:-/tmp}/ranks-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
half=$((STEPS / 2))
"$BUILD/bench/gen_ranks" "$dir" "$RANKS" "$STEPS" "$OPS" "insert:3:$half:$((OPS / 2 - 10))"
mb=$(du -sm "$dir" | cut -f1)
cat "$dir"/*.jsonl > /dev/null
best=""
i=0
while [ "$i" -lt "$REPS" ]; do
    i=$((i + 1))
    rc=0
    /usr/bin/time -f '%U %S %e' -o "$dir/time" "$BUILD/atlas-diff" --ranks "$dir/trace.%r.jsonl" \
        > "$dir/out" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q "^step \"step\" #$half: rank 3 differs from ranks 0-2,4-" "$dir/out"; then
        echo "ranks-bench: FAILED: exit $rc, expected rank 3 named at step $half:" >&2
        cat "$dir/out" >&2
        exit 1
    fi
    t=$(tail -n 1 "$dir/time" | awk '{ printf "%.2f %.2f %.2f %.2f", $1 + $2, $1, $2, $3 }')
    cpu=${t%% *}
    if [ -z "$best" ] || awk "BEGIN { exit !($cpu < ${best%% *}) }"; then
        best=$t
    fi
done
set -- $best
lines=$((RANKS * STEPS * (OPS + 1)))
awk -v r="$RANKS" -v s="$STEPS" -v o="$OPS" -v mb="$mb" -v n="$REPS" -v cpu="$1" -v u="$2" \
    -v sy="$3" -v w="$4" -v lines="$lines" 'BEGIN {
    ns = cpu * 1e9 / lines
    printf "ranks-bench: %d ranks x %d steps x %d ops (%d lines, %d MB): best of %d: %.2f s CPU " \
           "(user %.2f, sys %.2f), %.2f s wall; %.0f ns a line\n", r, s, o, lines, mb, n, cpu, u, sy, w, ns
    full = 64 * 10000 * 101
    printf "ranks-bench: 64 ranks x 10,000 steps x 100 ops at this rate: %.1f s of one core " \
           "(target: under 10 s)\n", ns * full / 1e9
}'
