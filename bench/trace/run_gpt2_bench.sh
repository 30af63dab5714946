#!/bin/sh
# A GPT-2 training step traced (ATLAS_TRACE=1, steps at syncs) against
# native, on the H200 (issue #30: 1.3-1.67x before; the bar is 1.10x):
#   bench/trace/run_gpt2_bench.sh BUILD_DIR [RUNS]
# RUNS (default 5) native and traced processes, interleaved; each prints the
# median of its blocks of timed steps (bench/races/gpt2_step.py, each step
# ending with the host reading the loss). Prints each run, the medians and
# their ratio, PASS or FAIL against 1.10x; exits 1 on FAIL.
build=${1:-build}
runs=${2:-5}
lib=$(realpath "$build/libatlastrace.so")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

one() { # NAME [ENV...]: one run, its step time appended to $tmp/NAME
    name=$1
    shift
    if env "$@" python3 bench/races/gpt2_step.py 100 sync >"$tmp/out" 2>"$tmp/err" &&
        grep -q '^ms_per_step ' "$tmp/out"; then
        ms=$(awk '/^ms_per_step/ {print $2}' "$tmp/out")
        echo "$ms" >>"$tmp/$name"
        echo "  $name: $ms ms a step"
    else
        echo "FAIL: gpt2 $name run: $(tail -n 3 "$tmp/out" "$tmp/err")"
        status=1
    fi
}

echo "== GPT-2 training step (4 layers, width 256, batch 8x128), $runs runs of each, interleaved"
r=0
while [ $r -lt "$runs" ]; do
    one native
    one traced ATLAS_TRACE=1 ATLAS_LOG="$tmp/log" LD_PRELOAD="$lib"
    r=$((r + 1))
done
[ $status -eq 0 ] || exit 1
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
n=$(med "$tmp/native")
t=$(med "$tmp/traced")
ratio=$(awk -v t="$t" -v n="$n" 'BEGIN {printf "%.3f", t / n}')
echo "gpt2: native $n ms, traced $t ms a step (medians of $runs): ${ratio}x"
echo "gpt2: the last traced run's summary: $(grep 'trace summary: steps=' "$tmp/log")"
if awk -v r="$ratio" 'BEGIN {exit !(r <= 1.10)}'; then
    echo "PASS: the traced GPT-2 step costs ${ratio}x native (bar: 1.10x)"
else
    echo "FAIL: the traced GPT-2 step costs ${ratio}x native (bar: 1.10x)"
    exit 1
fi
