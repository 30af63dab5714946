#!/bin/sh
# Red zones at the scale of real programs (issue #16), ratios against the
# native program in the same run; every repetition runs each configuration
# once (interleaved), and each figure is the median over REPS repetitions.
#   1. Launch mode per tiny launch with N live 4 KB allocations
#      (bench/redzone/rz_launch_bench.c): native, ATLAS_REDZONE=64 with
#      ATLAS_REDZONE_CHECK=launch, sync and free, and compute-sanitizer
#      memcheck when it is installed. Bars: launch mode within 1.3x across N,
#      at most 2x native at 10,000.
#   1b. The same loop in one process (the library dlopen'ed), alternating
#      blocks with the driver's own entry point, and the same with 1, 2, 4 and
#      8 launching threads (RZ_BENCH_THREADS), each on its own stream.
#   (The PyTorch training steps are bench/redzone/run_torch_bench.sh's.)
#
#   run_redzone_bench.sh BUILD [REPS] [MODULE]
# MODULE: the kernels' module, BUILD/bench/kern_bench.cubin by default (a
# GPU); make redzone-bench-fake passes the fake driver's shared object.
# RZ_BENCH_LIVE ("10 1000 10000"), RZ_BENCH_LAUNCHES (3000) and RZ_BENCH_BLOCKS
# (7: each process times that many blocks of LAUNCHES and prints the median
# block; memcheck, a thousand times slower at 10,000 live, times one) change
# the sizes.
set -eu
build=${1:-build}
reps=${2:-5}
module=${3:-$build/bench/kern_bench.cubin}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/rz_launch_bench
here=$(dirname "$0")
live_sizes=${RZ_BENCH_LIVE:-10 1000 10000}
launches=${RZ_BENCH_LAUNCHES:-3000}
blocks=${RZ_BENCH_BLOCKS:-7}
tmp=$(mktemp -d /tmp/atlas-rzbench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Launch mode with ATLAS_REDZONE_RECHECK=1 throughout: the loop's launches repeat (at 10 live,
# every tenth is identical to one checked), and these rows measure a check after every launch,
# the floor their bars are set on; the real-program matrix measures launch mode's default.
# name|environment ("-": no preload)|command prefix
configs="native|-|
launch|ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ATLAS_REDZONE_RECHECK=1|
sync|ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=sync|
free|ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=free|"
if command -v compute-sanitizer >/dev/null 2>&1; then
    configs="$configs
memcheck|-|compute-sanitizer --tool memcheck --print-limit 1"
fi

# shellcheck source=bench/redzone/bench_common.sh
. "$here/bench_common.sh"

r=0
while [ $r -lt "$reps" ]; do
    for live in $live_sizes; do
        echo "$configs" | while IFS='|' read -r name envs prefix; do
            nb=$blocks
            [ "$name" = memcheck ] && nb=1
            v=$(run "$envs" "$prefix" "$bin" "$module" "$live" "$launches" "$nb" |
                awk '/^us_per_launch/ { print $3 }')
            [ -n "$v" ] && echo "$v" >>"$tmp/launch.$name.$live"
        done
    done
    r=$((r + 1))
done

echo "### Launch mode against live allocations"
echo
echo "us per launch (blocks of $launches launches of a 3-pointer kernel, N live 4 KB allocations; each"
echo "process prints its median of $blocks blocks, memcheck's one block), median of $reps interleaved runs;"
echo "ratio to native in brackets."
echo
# shellcheck disable=SC2016
echo '| live allocations | native | `ATLAS_REDZONE_CHECK=launch` | `=sync` | `=free` | memcheck |'
echo '|---:|---:|---:|---:|---:|---:|'
for live in $live_sizes; do
    nat=$(median "$tmp/launch.native.$live")
    printf '| %s | %s | %s | %s | %s | %s |\n' "$live" "$nat" \
        "$(cell "$(median "$tmp/launch.launch.$live")" "$nat")" \
        "$(cell "$(median "$tmp/launch.sync.$live")" "$nat")" \
        "$(cell "$(median "$tmp/launch.free.$live")" "$nat")" \
        "$(cell "$(median "$tmp/launch.memcheck.$live")" "$nat")"
done
echo
lo=$(for live in $live_sizes; do median "$tmp/launch.launch.$live"; done | grep -v '^-$' | sort -n | head -1)
hi=$(for live in $live_sizes; do median "$tmp/launch.launch.$live"; done | grep -v '^-$' | sort -n | tail -1)
last=$(echo "$live_sizes" | awk '{ print $NF }')
if [ -n "$lo" ]; then
    awk -v lo="$lo" -v hi="$hi" -v l="$(median "$tmp/launch.launch.$last")" \
        -v n="$(median "$tmp/launch.native.$last")" -v last="$last" 'BEGIN {
        printf "launch mode: slowest/fastest across N %.2fx (bar 1.3x); at %s live %.2fx native (bar 2x)\n",
            hi / lo, last, (n > 0) ? l / n : 0 }'
fi

# The same loop inside one process (rz_launch_bench ... ab LIB): blocks
# alternate between the driver's launch and the library's, so the ratio is
# free of the process-to-process spread of the table above.
r=0
while [ $r -lt "$reps" ]; do
    for live in $live_sizes; do
        env ATLAS_LOG=/dev/null ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ATLAS_REDZONE_RECHECK=1 \
            "$bin" "$module" "$live" "$launches" "$blocks" ab "$lib" 2>/dev/null |
            awk '/^ab / { print $8, $16 }' >>"$tmp/ab.$live"
    done
    r=$((r + 1))
done
echo
echo "### Launch mode inside one process"
echo
echo "The library dlopen'ed in the program, blocks of $launches launches alternating between the"
echo "driver's cuLaunchKernel and the library's (launch mode), each block ended by its side's"
echo "cuCtxSynchronize; per process the median block of each side, then the median ratio of $reps"
echo "processes (min..max)."
echo
echo '| live allocations | with the sync | enqueue only |'
echo '|---:|---:|---:|'
for live in $live_sizes; do
    if [ ! -s "$tmp/ab.$live" ]; then
        echo "| $live | - | - |"
        continue
    fi
    a=$(awk '{ print $1 }' "$tmp/ab.$live" | sort -n | awk '{ v[NR] = $1 } END {
        printf "%.2fx (%.2f..%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }')
    e=$(awk '{ print $2 }' "$tmp/ab.$live" | sort -n | awk '{ v[NR] = $1 } END {
        printf "%.2fx (%.2f..%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }')
    echo "| $live | $a | $e |"
done

# Several launching threads (rz_launch_bench ... ab-threads LIB T): each on a
# stream of its own over the same 1,000 live allocations, all on one side at
# a time; a lock on the launch path shows as a ratio that grows with T.
threads=${RZ_BENCH_THREADS:-1 2 4 8}
r=0
while [ $r -lt "$reps" ]; do
    for t in $threads; do
        env ATLAS_LOG=/dev/null ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ATLAS_REDZONE_RECHECK=1 \
            "$bin" "$module" 1000 "$launches" "$blocks" ab-threads "$lib" "$t" 2>/dev/null |
            awk '/^ab-threads / { print $5, $7, $9 }' >>"$tmp/threads.$t"
    done
    r=$((r + 1))
done
echo
echo "### Launch mode with several launching threads"
echo
echo "The same in-process A/B with T threads, each on its own stream, 1,000 live allocations; us per"
echo "launch of one thread, median block over every thread's blocks; per T the median ratio of"
echo "$reps processes (min..max) and that process's figures."
echo
echo '| threads | native | launch mode | ratio |'
echo '|---:|---:|---:|---:|'
for t in $threads; do
    if [ ! -s "$tmp/threads.$t" ]; then
        echo "| $t | - | - | - |"
        continue
    fi
    sort -n -k3 "$tmp/threads.$t" | awk -v t="$t" '{ n[NR] = $1; a[NR] = $2; v[NR] = $3 } END {
        m = int((NR + 1) / 2)
        printf "| %s | %.2f | %.2f | %.2fx (%.2f..%.2f) |\n", t, n[m], a[m], v[m], v[1], v[NR] }'
done

echo
echo "(PyTorch training steps, MLP and GPT-2, against the routed pool and native: make"
echo "redzone-torch-bench, bench/redzone/run_torch_bench.sh)"
