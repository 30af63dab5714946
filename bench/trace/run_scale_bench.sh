#!/bin/sh
# The step trace at scale, on the fake driver (bench/trace/trace_scale.c):
#   bench/trace/run_scale_bench.sh BUILD_DIR [N]
# 1. the end of an N-op step that differs in 3 ops from the one before, in process (wall time of
#    the sync), without and with ATLAS_TRACE_FILE, and the peak RSS (memory per op);
# 2. atlas-diff on two N-op files whose second steps differ in 3 ops;
# 3. T = 1, 4, 16 threads on their own streams, traced against untraced in one process.
build=${1:-build}
n=${2:-1000000}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/trace_scale
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/fake"
run() { env ATLAS_LOG=/dev/null ATLAS_TRACE_MAX_MB=8192 LD_PRELOAD="$lib" "$@"; }

echo "== one $n-op step end (3 ops differ), in process"
"$bin" big "$n" 3 | sed 's/^/native:     /'
run ATLAS_TRACE=1 "$bin" big "$n" 3 | sed 's/^/trace:      /'
run ATLAS_TRACE=1 ATLAS_TRACE_FILE="$tmp/a.jsonl" "$bin" big "$n" 3 | sed 's/^/trace+file: /'
run ATLAS_TRACE=1 ATLAS_TRACE_FILE="$tmp/b.jsonl" "$bin" big "$n" 0 >/dev/null
echo "file: $(wc -c <"$tmp/a.jsonl") bytes, $(wc -l <"$tmp/a.jsonl") lines"

echo "== atlas-diff on two $n-op runs (the second step differs in 3 ops in one of them)"
for f in a b; do
    s=$(date +%s.%N)
    "$build/atlas-diff" "$tmp/b.jsonl" "$tmp/$f.jsonl" >/dev/null 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "atlas-diff b.jsonl $f.jsonl: exit $rc, $(echo "$e - $s" | bc) s"
done

echo "== threads, each on its own stream, a sync every 256 (traced against untraced, one process)"
for t in 1 4 16; do
    ATLAS_TRACE=1 ATLAS_LOG=/dev/null "$bin" threads $t $((320000 / t)) "$lib"
done
