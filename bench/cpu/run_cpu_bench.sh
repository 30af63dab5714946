#!/bin/sh
# CPU-only overhead table: ns and instructions per intercepted call against
# the fake driver, native vs the preload idle vs each feature configuration.
#   run_cpu_bench.sh BUILD REPS N "name:ENV=V ENV=V;name2:..." ["256 10000"] \
#                    ["1 16 256"] ["30 100"]
# The fifth argument adds rows launch:K, the launch loop over K distinct
# kernels in turn (cpu_bench.c), for each count K; the sixth, rows with a
# cuCtxSynchronize every S launches (sS:kK:pP: each K, kernels of 0 and 8
# parameters) and a row of syncs alone; the seventh, rows reload:R, launches
# after R reloads of a 256-kernel module. CPU_BENCH_BIN and CPU_BENCH_LOOPS
# run another program of the same interface (its loops by name; make
# races-bench).
# Configurations run interleaved (native, idle, stats, ... then again), REPS
# times; the table shows the median, the spread (min..max) and the ratio of
# medians against native. Instructions come from callgrind as
# (Ir at N2 - Ir at N1) / (N2 - N1), so start-up and exit cancel out.
set -eu
BUILD=$1
REPS=${2:-7}
N=${3:-1000000}
EXTRA=${4:-}
KERNELS=${5:-}
SYNCS=${6:-}
RELOADS=${7:-}
export CPU_BENCH_KERNELS="$KERNELS"
LOOPS=${CPU_BENCH_LOOPS:-launch args8 dtoh gpt2}
for k in $KERNELS; do LOOPS="$LOOPS launch:$k"; done
EXTRA_LOOPS=
[ -n "$SYNCS" ] && EXTRA_LOOPS="sync"
for s in $SYNCS; do
    for k in ${KERNELS:-256}; do
        for p in 0 8; do EXTRA_LOOPS="$EXTRA_LOOPS s$s:k$k:p$p"; done
    done
done
for r in $RELOADS; do EXTRA_LOOPS="$EXTRA_LOOPS reload:$r"; done
# CPU_BENCH_MORE: more of the program's own loops, by name (make cpu-bench: adamw adamw:pool cupy)
EXTRA_LOOPS="$EXTRA_LOOPS ${CPU_BENCH_MORE:-}"
export CPU_BENCH_EXTRA_LOOPS="$EXTRA_LOOPS"
LOOPS="$LOOPS $EXTRA_LOOPS"
BIN=${CPU_BENCH_BIN:-$BUILD/bench/cpu_bench}
LIB=$(realpath "$BUILD/libatlastrace.so")
FAKE=$(realpath "$BUILD/fake")
TMP=$(mktemp -d /tmp/atlas-cpubench-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# name:env list; "native" runs without the preload.
CONFIGS="native:;idle:;stats:ATLAS_STATS=1"
[ -n "$EXTRA" ] && CONFIGS="$CONFIGS;$EXTRA"

each_config() { # calls "$1 NAME ENV" for each configuration
    echo "$CONFIGS" | tr ';' '\n' | while IFS= read -r c; do
        [ -n "$c" ] && "$1" "${c%%:*}" "${c#*:}"
    done
}

run_one() { # NAME ENV -> appends launch/dtoh ns to $TMP/NAME.{launch,dtoh}
    if [ "$1" = native ]; then
        out=$(env LD_LIBRARY_PATH="$FAKE" "$BIN" "$N")
    else
        # shellcheck disable=SC2086
        out=$(env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" $2 "$BIN" "$N" 2>/dev/null)
    fi
    echo "$out" | awk -v d="$TMP" -v c="$1" '{ print $2 >> (d "/" c "." $1) }'
}

r=0
while [ $r -lt "$REPS" ]; do
    each_config run_one
    r=$((r + 1))
done

N1=20000
N2=120000
# ATL_FLIGHT_COLD_SPACING (src/ring.h)
SPACING=$(awk '/define ATL_FLIGHT_COLD_SPACING/ { print $3 }' src/ring.h)
# The launches a row's instructions are counted over. With syncs, the flight
# recorder keeps each kernel's arguments once per epoch, and an epoch of K
# kernels lasts 1,024 x K launches (src/ring.h): a row counts over whole
# epochs when one is short enough for callgrind (the cold paths included,
# at their average); a longer one is marked ' (in one epoch)', its cold
# paths not counted (at most 1 launch in 1,024 takes one: about +0.5), over one
# round of its kernels (the fake driver's launch looks its handle up in a
# list: 27,000 instructions with 10,000 kernels).
window() { # LOOP -> launches
    case $1 in
    s*:k*:p*)
        s=${1#s}; s=${s%%:*}; k=${1#*:k}; k=${k%%:*}
        e=$(( (SPACING * k + s - 1) / s * s ))
        if [ "$e" -le 400000 ]; then
            echo $(( e * ((100000 + e - 1) / e) ))
        elif [ "$k" -ge 10000 ]; then
            echo "$k"
        else
            echo $((N2 - N1))
        fi
        return ;;
    esac
    echo $((N2 - N1))
}
ir() { # NAME ENV LOOP COUNT -> total instructions
    f=$TMP/cg.$1.$3.$4
    if [ "$1" = native ]; then
        env LD_LIBRARY_PATH="$FAKE" valgrind --tool=callgrind --callgrind-out-file="$f" \
            "$BIN" "$4" "$3" >/dev/null 2>&1
    else
        # shellcheck disable=SC2086
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" $2 valgrind --tool=callgrind \
            --callgrind-out-file="$f" "$BIN" "$4" "$3" >/dev/null 2>&1
    fi
    awk '/^summary:/ { print $2 }' "$f"
}
have_cg=0
command -v valgrind >/dev/null 2>&1 && have_cg=1

stats() { # FILE -> "median min max"
    sort -n "$1" | awk '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'
}

echo "atlastrace CPU overhead per intercepted call (fake driver, no GPU): $REPS interleaved reps x $N calls"
printf '%-10s %-15s %10s %17s %8s %10s %10s %10s %8s\n' config call "ns median" "ns min..max" ratio "+ns" \
    "instr" "+instr" "+launch"
row() {
    name=$1
    for loop in $LOOPS; do
        set -- $(stats "$TMP/$name.$loop")
        med=$1 lo=$2 hi=$3
        set -- $(stats "$TMP/native.$loop")
        nmed=$1
        ins=- dins=- lins= note=
        if [ $have_cg = 1 ]; then
            w=$(window $loop)
            a=$(ir "$name" "$envs" $loop $N1)
            b=$(ir "$name" "$envs" $loop $((N1 + w)))
            ins=$(awk -v a="$a" -v b="$b" -v d="$w" 'BEGIN { printf "%.1f", (b - a) / d }')
            echo "$ins" > "$TMP/$name.$loop.ir"
            nins=$(cat "$TMP/native.$loop.ir" 2>/dev/null || echo "$ins")
            dins=$(awk -v a="$ins" -v b="$nins" 'BEGIN { printf "%+.1f", a - b }')
            echo "$dins" > "$TMP/$name.$loop.dir"
            case $loop in
            s*:k*:p*)
                # the launch's share: less what this configuration's sync
                # alone adds, once every S launches
                s=${loop#s}; s=${s%%:*}
                sync=$(cat "$TMP/$name.sync.dir" 2>/dev/null || echo 0)
                lins=$(awk -v a="$dins" -v b="$sync" -v s="$s" 'BEGIN { printf "%+.1f", a - b / s }')
                k=${loop#*:k}; k=${k%%:*}
                [ $(( SPACING * k )) -gt 400000 ] && note=" (in one epoch)" ;;
            esac
        fi
        printf '%-10s %-15s %10s %17s %7.2fx %+10.2f %10s %10s %8s%s\n' "$name" $loop "$med" "$lo..$hi" \
            "$(awk -v a="$med" -v b="$nmed" 'BEGIN { print a / b }')" \
            "$(awk -v a="$med" -v b="$nmed" 'BEGIN { print a - b }')" "$ins" "$dins" "$lins" "$note"
    done
}
each_row() { envs=$2; row "$1"; }
each_config each_row
[ $have_cg = 1 ] || echo "(valgrind not installed: no instruction counts)"
