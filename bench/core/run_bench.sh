#!/bin/sh
# Overhead of the preload on launch-bound and copy-bound loops, as ratios
# against the native loop in the same run: configurations are interleaved,
# REPS repetitions each, median and spread (min..max) reported.
#   bench/core/run_bench.sh BUILD_DIR [REPS]
build=${1:-build}
reps=${2:-7}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/bench_launch
cubin=$build/bench/kern_bench.cubin
tmp=$(mktemp -d)

# configs: name|environment (LD_PRELOAD added for all but native)
configs="native|
idle|
stats|ATLAS_STATS=1 ATLAS_LOG=/dev/null"
[ -n "$ATLAS_BENCH_CONFIGS" ] && configs=$(printf '%s\n%s' "$configs" "$ATLAS_BENCH_CONFIGS")

for loop in empty:200000 args8:200000 d2h:50000; do
    mode=${loop%%:*}
    iters=${loop##*:}
    r=0
    while [ $r -lt "$reps" ]; do
        echo "$configs" | while IFS='|' read -r name envs; do
            if [ "$name" = native ]; then
                v=$("$bin" "$cubin" "$mode" "$iters" | awk '{print $2}')
            else
                v=$(env $envs LD_PRELOAD="$lib" "$bin" "$cubin" "$mode" "$iters" | awk '{print $2}')
            fi
            echo "$v" >>"$tmp/$mode.$name"
        done
        r=$((r + 1))
    done
done

printf '%-8s %-24s %12s %22s %8s\n' loop config "median ns/op" "spread (min..max)" ratio
for mode in empty args8 d2h; do
    base=$(sort -n "$tmp/$mode.native" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$configs" | while IFS='|' read -r name envs; do
        sort -n "$tmp/$mode.$name" | awk -v m="$mode" -v n="$name" -v b="$base" '
            {a[NR]=$1} END {med=a[int((NR+1)/2)];
            printf "%-8s %-24s %12.1f %10.1f..%-10.1f %7.3fx\n", m, n, med, a[1], a[NR], med/b}'
    done
done
echo
echo "idle path inside one process (library dlopen'ed, blocks of 256 launches alternating):"
for mode in ab-empty ab-args8; do
    printf '%-9s ' "$mode"
    "$bin" "$cubin" "$mode" 400000 "$lib"
done
rm -rf "$tmp"
