#!/bin/sh
# Overhead of the preload, as ratios against the native program in the same
# run: configurations are interleaved (every repetition runs each one once),
# REPS repetitions each; median and spread (min..max) per configuration.
#   bench/core/run_bench.sh BUILD_DIR [REPS]
# Loops: an empty-kernel launch loop, an 8-parameter kernel loop, a 16-byte
# synchronous device-to-host copy loop, and PyTorch eager steps of a small MLP.
build=${1:-build}
reps=${2:-7}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/bench_launch
cubin=$build/bench/kern_bench.cubin
here=$(dirname "$0")
tmp=$(mktemp -d)

# (redzone-launch with ATLAS_REDZONE_RECHECK=1: the loops repeat one launch, and the row is
# the cost of a check after every launch, against memcheck's)
# name|environment|command prefix ("-": the native program, no preload)
configs="native|-|
idle||
stats|ATLAS_STATS=1|
trace|ATLAS_TRACE=1|
redzone-free|ATLAS_REDZONE=256|
redzone-sync|ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=sync|
redzone-launch|ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch ATLAS_REDZONE_RECHECK=1|
d2h-trace|ATLAS_D2H_TRACE=100000000|
debug-sync|ATLAS_DEBUG_SYNC_KERNELS=1|
kernel-audit|ATLAS_KERNEL_AUDIT=1|"
if command -v compute-sanitizer >/dev/null 2>&1; then
    configs="$configs
memcheck|-|compute-sanitizer --tool memcheck --print-limit 1"
fi
[ -n "$ATLAS_BENCH_CONFIGS" ] && configs=$(printf '%s\n%s' "$configs" "$ATLAS_BENCH_CONFIGS")
# BENCH_ONLY="native idle trace": run only these configurations
if [ -n "$BENCH_ONLY" ]; then
    configs=$(echo "$configs" | while IFS='|' read -r name rest; do
        case " $BENCH_ONLY " in *" $name "*) echo "$name|$rest" ;; esac
    done)
fi

loops="empty:100000 args8:100000 d2h:40000"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    loops="$loops torch:2000"
fi
# BENCH_LOOPS="empty:100000 args8:100000": run only these loops
[ -n "$BENCH_LOOPS" ] && loops=$BENCH_LOOPS

one() { # mode iters envs prefix
    if [ "$1" = torch ]; then set -- "$@" python3 "$here/torch_steps.py" "$2"
    else set -- "$@" "$bin" "$cubin" "$1" "$2"; fi
    mode=$1 envs=$3 prefix=$4
    shift 4
    if [ "$envs" = "-" ]; then
        env ATLAS_LOG=/dev/null $prefix "$@"
    else
        env ATLAS_LOG=/dev/null $envs LD_PRELOAD="$lib" $prefix "$@"
    fi 2>/dev/null | awk '/^ns_per_op/ {print $2}'
}

for loop in $loops; do
    mode=${loop%%:*}
    iters=${loop##*:}
    r=0
    while [ $r -lt "$reps" ]; do
        echo "$configs" | while IFS='|' read -r name envs prefix; do
            # memcheck is the comparison for the launch loops only; the
            # PyTorch loop (seconds of start-up per run) gets the configs
            # whose bar is stated on eager steps
            [ "$name" = memcheck ] && [ "$mode" != empty ] && [ "$mode" != args8 ] && continue
            if [ "$mode" = torch ]; then
                case $name in native | idle | stats | trace | redzone-free | d2h-trace) ;; *) continue ;; esac
            fi
            v=$(one "$mode" "$iters" "$envs" "$prefix")
            [ -n "$v" ] && echo "$v" >>"$tmp/$mode.$name"
        done
        r=$((r + 1))
    done
done

printf '%-7s %-16s %14s %24s %9s\n' loop config "median ns/op" "spread (min..max)" ratio
for loop in $loops; do
    mode=${loop%%:*}
    base=$(sort -n "$tmp/$mode.native" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$configs" | while IFS='|' read -r name envs prefix; do
        [ -s "$tmp/$mode.$name" ] || continue
        sort -n "$tmp/$mode.$name" | awk -v m="$mode" -v n="$name" -v b="$base" '
            {a[NR]=$1} END {med=a[int((NR+1)/2)];
            printf "%-7s %-16s %14.1f %11.1f..%-11.1f %8.3fx\n", m, n, med, a[1], a[NR], med/b}'
    done
done

echo
echo "idle path inside one process (library dlopen'ed, blocks of 256 launches or copies alternating):"
for mode in ab-empty ab-args8 ab-d2h; do
    printf '%-9s ' "$mode"
    "$bin" "$cubin" "$mode" 400000 "$lib"
done
echo "launching threads, each on its own stream (idle path, same process):"
for t in 1 4 16; do
    "$bin" "$cubin" ab-threads 100000 "$lib" "$t"
done
rm -rf "$tmp"
