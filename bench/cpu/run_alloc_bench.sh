#!/bin/sh
# Allocation + free pair cost against the number of live allocations, on
# the fake driver (or the real one, below): native, then each configuration,
# at each size, in one run.
#   run_alloc_bench.sh BUILD "10 1000 100000 1000000" PAIRS [CG_SIZES]
# Prints ns per pair, the ratio against native at the same size, and the
# preload's added ns at each size against its added ns at the smallest.
# Then, where valgrind is installed, instructions per pair at each of
# CG_SIZES (default "10 1000000"), from callgrind over 2000 timed pairs only
# (alloc_bench turns instrumentation on around them, so building a million
# live allocations runs uninstrumented): a loaded machine does not move the
# figure.
# With ALLOC_BENCH_GPU=1 (make alloc-bench-gpu) the same rounds run on the
# real driver, BUILD/bench/alloc_bench_gpu, and no instruction counts.
set -eu
BUILD=$1
SIZES=${2:-10 1000 100000 1000000}
PAIRS=${3:-20000}
BIN=$BUILD/bench/alloc_bench
LIB=$(realpath "$BUILD/libatlastrace.so")
FAKE=$(realpath "$BUILD/fake")
CG_SIZES=${4:-10 1000000}
DRIVER="fake driver, no GPU"
if [ "${ALLOC_BENCH_GPU:-}" = 1 ]; then
    BIN=$BUILD/bench/alloc_bench_gpu
    FAKE=${LD_LIBRARY_PATH:-}
    DRIVER="real driver"
fi
CONFIGS="native:;ledger+trace:ATLAS_TRACE=1;redzone:ATLAS_REDZONE=64"

one() { # ENV LIVE -> ns per pair
    if [ -z "$1" ]; then
        env LD_LIBRARY_PATH="$FAKE" "$BIN" "$2" "$PAIRS" | awk '{ print $3 }'
    else
        # shellcheck disable=SC2086
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" $1 "$BIN" "$2" "$PAIRS" 2>/dev/null |
            awk '{ print $3 }'
    fi
}

echo "atlastrace allocation + free pair ($DRIVER): $PAIRS pairs per run"
printf '%-13s %9s %10s %8s %10s %14s\n' config live "ns/pair" ratio "+ns" "+ns vs first"
echo "$CONFIGS" | tr ';' '\n' | while IFS= read -r c; do
    name=${c%%:*} envs=${c#*:}
    first=
    for live in $SIZES; do
        nat=$(one "" "$live")
        if [ "$name" = native ]; then
            printf '%-13s %9s %10s\n' native "$live" "$nat"
            continue
        fi
        t=$(one "$envs" "$live")
        add=$(awk -v a="$t" -v b="$nat" 'BEGIN { printf "%.1f", a - b }')
        [ -z "$first" ] && first=$add
        printf '%-13s %9s %10s %7.2fx %+10s %13.2fx\n' "$name" "$live" "$t" \
            "$(awk -v a="$t" -v b="$nat" 'BEGIN { print a / b }')" "$add" \
            "$(awk -v a="$add" -v b="$first" 'BEGIN { print (b > 0) ? a / b : 0 }')"
    done
done

[ "${ALLOC_BENCH_GPU:-}" = 1 ] && exit 0
command -v valgrind >/dev/null 2>&1 || { echo "(valgrind not installed: no instruction counts)"; exit 0; }
TMP=$(mktemp -d /tmp/atlas-allocbench-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ir() { # ENV LIVE PAIRS -> instructions in the timed pairs
    f=$TMP/cg.out
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$FAKE" ${1:+LD_PRELOAD="$LIB"} $1 valgrind --tool=callgrind \
        --instr-atstart=no --callgrind-out-file="$f" "$BIN" "$2" "$3" >/dev/null 2>&1
    awk '/^totals:/ { print $2 }' "$f"
}
printf '%-13s %9s %12s %12s\n' config live "instr/pair" "+instr"
echo "$CONFIGS" | tr ';' '\n' | while IFS= read -r c; do
    name=${c%%:*} envs=${c#*:}
    for live in $CG_SIZES; do
        per=$(awk -v a="$(ir "$envs" "$live" 2000)" 'BEGIN { printf "%.0f", a / 2000 }')
        if [ "$name" = native ]; then
            echo "$per" >"$TMP/native.$live"
            printf '%-13s %9s %12s\n' native "$live" "$per"
        else
            printf '%-13s %9s %12s %+12d\n' "$name" "$live" "$per" $((per - $(cat "$TMP/native.$live")))
        fi
    done
done
