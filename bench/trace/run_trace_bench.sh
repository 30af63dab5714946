#!/bin/sh
# Cost of recording (ATLAS_TRACE=1) on the 8-parameter launch loop of
# bench/core/bench_launch.c, as a ratio against the native loop in the same
# run. The loop synchronises every 256 launches, so every ratio includes the
# step ends (merge, pointer resolution, diff) as well as the recording.
#   bench/trace/run_trace_bench.sh BUILD_DIR [REPS]
# First process against process (a table; the VM's spread between processes
# is several percent), then inside one process (bench_launch ab-args8 under
# ATLAS_TRACE=1, REPS runs): the bar, trace/native <= 1.05 on the median of
# the in-process ratios with the sync included, prints PASS or FAIL and
# exits 1 on FAIL.
build=${1:-build}
reps=${2:-7}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/bench_launch
cubin=$build/bench/kern_bench.cubin
tmp=$(mktemp -d)
iters=200000

r=0
while [ $r -lt "$reps" ]; do
    "$bin" "$cubin" args8 $iters | awk '{print $2}' >>"$tmp/native"
    LD_PRELOAD="$lib" "$bin" "$cubin" args8 $iters | awk '{print $2}' >>"$tmp/idle"
    ATLAS_TRACE=1 ATLAS_LOG=/dev/null LD_PRELOAD="$lib" "$bin" "$cubin" args8 $iters |
        awk '{print $2}' >>"$tmp/trace"
    r=$((r + 1))
done

med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(med "$tmp/native")
printf '%-8s %12s %22s %8s\n' config "median ns/op" "spread (min..max)" ratio
for c in native idle trace; do
    sort -n "$tmp/$c" | awk -v n="$c" -v b="$base" '{a[NR]=$1} END {med=a[int((NR+1)/2)];
        printf "%-8s %12.1f %10.1f..%-10.1f %7.3fx\n", n, med, a[1], a[NR], med/b}'
done
echo
echo "inside one process (blocks of 256 launches alternating, each ending in its own sync):"
r=0
while [ $r -lt "$reps" ]; do
    line=$(ATLAS_TRACE=1 ATLAS_LOG=/dev/null "$bin" "$cubin" ab-args8 300000 "$lib")
    echo "  $line"
    echo "$line" | awk '{print $NF}' >>"$tmp/ab"
    r=$((r + 1))
done
ratio=$(med "$tmp/ab")
rm -rf "$tmp"
if awk -v r="$ratio" 'BEGIN {exit !(r <= 1.05)}'; then
    echo "PASS: trace recording costs ${ratio}x the native 8-parameter launch, step ends included (median of $reps in-process runs; bar: 1.05x)"
else
    echo "FAIL: trace recording costs ${ratio}x the native 8-parameter launch, step ends included (median of $reps in-process runs; bar: 1.05x)"
    exit 1
fi
