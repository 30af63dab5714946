#!/bin/sh
# The step trace at scale, on the fake driver (bench/trace/trace_scale.c):
#   bench/trace/run_scale_bench.sh BUILD_DIR [N]
# 1. the ends of N-op steps (one that differs in 3 ops from the one before, one that differs back,
#    one identical), in process (wall and CPU time of the sync), and the peak RSS; then with
#    ATLAS_TRACE_FILE, steps of N/4 ops (N ops in the file), and those steps without the file;
# 2. atlas-diff on two N-op files, one of whose second steps differs in 3 ops (wall and CPU time);
#    then on two runs of 40,000 one-op steps (a synchronous copy each: many small steps);
# 3. T = 1, 4, 16 threads on their own streams, traced against untraced in one process.
build=${1:-build}
n=${2:-1000000}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/trace_scale
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/fake"
run() { env ATLAS_LOG=/dev/null ATLAS_TRACE_MAX_MB=8192 LD_PRELOAD="$lib" "$@"; }

echo "== $n-op step ends (step 2: 3 ops differ; 3: differs back; 4: identical), in process"
"$bin" big "$n" 3 | sed 's/^/native:     /'
run ATLAS_TRACE=1 "$bin" big "$n" 3 | sed 's/^/trace:      /'
# the files: four steps of N/4 ops, N ops in each file
q=$((n / 4))
run ATLAS_TRACE=1 ATLAS_TRACE_FILE="$tmp/a.jsonl" "$bin" big "$q" 3 | sed 's/^/trace+file: /'
# the same steps without the file: the difference is the writer's (and the kernel's) share
run ATLAS_TRACE=1 "$bin" big "$q" 3 | sed 's/^/trace, N\/4: /'
run ATLAS_TRACE=1 ATLAS_TRACE_FILE="$tmp/b.jsonl" "$bin" big "$q" 0 >/dev/null
echo "file: $(wc -c <"$tmp/a.jsonl") bytes, $(wc -l <"$tmp/a.jsonl") lines"

echo "== atlas-diff on two $n-op runs (the second step differs in 3 ops in one of them)"
# CPU time too: on a machine shared with other work the wall time says little
for f in a b; do
    s=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%U %S" -o "$tmp/time" "$build/atlas-diff" "$tmp/b.jsonl" "$tmp/$f.jsonl" \
            >/dev/null 2>&1
    else
        "$build/atlas-diff" "$tmp/b.jsonl" "$tmp/$f.jsonl" >/dev/null 2>&1
    fi
    rc=$?
    e=$(date +%s.%N)
    cpu=$([ -s "$tmp/time" ] && awk 'END {printf ", CPU %.2f s (user %.2f, sys %.2f)", $1 + $2, $1, $2}' "$tmp/time")
    rm -f "$tmp/time"
    echo "atlas-diff b.jsonl $f.jsonl: exit $rc, $(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.2f", e - s}') s$cpu"
done

echo "== atlas-diff on two runs of 40,000 one-op steps (each a synchronous 16-byte copy)"
for f in c d; do
    run ATLAS_TRACE=1 ATLAS_TRACE_FILE="$tmp/$f.jsonl" "$build/bench/cpu_bench" 40000 dtoh >/dev/null
done
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$build/atlas-diff" "$tmp/c.jsonl" "$tmp/d.jsonl" >/dev/null 2>&1
    echo "atlas-diff c.jsonl d.jsonl: exit $?, $(awk '{printf "CPU %.2f s (user %.2f, sys %.2f)", $1 + $2, $1, $2}' "$tmp/time")"
fi

echo "== threads, each on its own stream, a sync every 256 (traced against untraced, one process)"
for t in 1 4 16; do
    ATLAS_TRACE=1 ATLAS_LOG=/dev/null "$bin" threads $t $((320000 / t)) "$lib"
done
