#!/bin/sh
# The step trace on a caching allocator's steady state (bench/trace/trace_churn.c, issue #43):
#   bench/trace/run_churn_bench.sh BUILD_DIR ["10000 100000"]
# For each symbol count N (libchurn.so with N exported symbols, where every allocation and
# free is made): instructions a step under callgrind, (Ir at S2 steps - Ir at S1) / (S2 - S1),
# natively, traced (ATLAS_TRACE=1, its defaults), traced with ATLAS_STACK_DEPTH=0 (no call
# stacks: nothing to name) and traced with ATLAS_SYMBOLS=0; and the wall time of a step (the
# median of 40). The bar: traced at most 1.2x the instructions of depth 0 (nothing is named on a
# hook's path, and what is printed is named once).
# CHURN_CHECK=1 (make check's trace-churn-check): the callgrind rows only, fewer steps, a bound
# of 2x, each run cut at CHURN_TIMEOUT seconds (default 300: the cliff this catches made a step
# cost 7,700 M instructions, a run hours); prints "trace-churn-check: PASS/FAIL: ..." lines.
build=${1:-build}
syms=${2:-10000 100000}
lib=$(realpath "$build/libatlastrace.so")
bin=$build/bench/trace_churn
check=${CHURN_CHECK:-0}
limit=${CHURN_TIMEOUT:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
live=2000
launches=600
churn=8
# past the first steps, which name the sites that later steps print again (libchurn has 100
# chains of each kind: every one is printed within the first dozen steps)
if [ "$check" = 1 ]; then s1=14 s2=20 bar=2.0 name=trace-churn-check; else s1=16 s2=28 bar=1.2 name=trace-churn-bench; fi
status=0

if ! command -v valgrind >/dev/null 2>&1; then
    if [ "$check" = 1 ]; then
        echo "$name: FAIL: valgrind is missing (make check installs it)"
        exit 1
    fi
    echo "$name: valgrind is missing: no instruction counts, wall times only"
fi

nl='
'
ifs=$IFS
settings() { # CONFIG -> its environment words, one a line
    case $1 in
    trace) printf '%s\n' "LD_PRELOAD=$lib" ATLAS_TRACE=1 ;;
    depth0) printf '%s\n' "LD_PRELOAD=$lib" ATLAS_TRACE=1 ATLAS_STACK_DEPTH=0 ;;
    nosym) printf '%s\n' "LD_PRELOAD=$lib" ATLAS_TRACE=1 ATLAS_SYMBOLS=0 ;;
    esac
}

ir() { # N CONFIG STEPS -> total instructions ("" when the run failed or ran out of time)
    n=$1 c=$2 s=$3
    f=$tmp/cg.$n.$c.$s
    IFS=$nl # one setting a line, whatever spaces the library's path holds
    # shellcheck disable=SC2046
    set -- $(settings "$c")
    IFS=$ifs
    env LD_LIBRARY_PATH="$build/fake:$build/bench/churn$n" ATLAS_LOG="$tmp/log.$n.$c.$s" "$@" \
        timeout "$limit" valgrind --tool=callgrind --callgrind-out-file="$f" \
        "$bin" "$s" $live $launches $churn count >/dev/null 2>"$tmp/err" || return 0
    awk '/^summary:/ { print $2 }' "$f"
}

per_step() { # N CONFIG -> instructions a step, or "-"
    a=$(ir "$1" "$2" $s1)
    b=$(ir "$1" "$2" $s2)
    if [ -n "$a" ] && [ -n "$b" ]; then
        awk -v a="$a" -v b="$b" -v d=$((s2 - s1)) 'BEGIN { printf "%.0f", (b - a) / d }'
    else
        echo -
    fi
}

wall() { # N CONFIG -> the median step's microseconds
    n=$1 c=$2
    IFS=$nl # one setting a line, whatever spaces the library's path holds
    # shellcheck disable=SC2046
    set -- $(settings "$c")
    IFS=$ifs
    env LD_LIBRARY_PATH="$build/fake:$build/bench/churn$n" ATLAS_LOG=/dev/null "$@" \
        timeout "$limit" "$bin" 40 $live $launches $churn 2>/dev/null |
        awk '/^step_us/ { print $2 }'
}

echo "== $name: steps of $launches launches over $live live allocations, $churn freed and made again" \
    "a step, through libchurn.so (N exported symbols, 100 call chains at one stack address)"
printf '%-8s %-8s %14s %10s %12s\n' symbols config "Ir a step" "x depth0" "wall us"
for n in $syms; do
    d0=$(per_step "$n" depth0)
    configs="native trace depth0 nosym"
    [ "$check" = 1 ] && configs="trace depth0"
    for c in $configs; do
        if [ "$c" = depth0 ]; then v=$d0; else v=$(per_step "$n" "$c"); fi
        x=-
        [ "$v" != - ] && [ "$d0" != - ] && x=$(awk -v v="$v" -v d="$d0" 'BEGIN { printf "%.2f", v / d }')
        w=-
        [ "$check" = 1 ] || w=$(wall "$n" "$c")
        printf '%-8s %-8s %14s %10s %12s\n' "$n" "$c" "$v" "$x" "${w:--}"
        if [ "$c" = trace ]; then
            if [ "$x" != - ] && awk -v x="$x" -v b=$bar 'BEGIN { exit !(x <= b) }'; then
                echo "$name: PASS: $n symbols: a traced step costs ${x}x the instructions of ATLAS_STACK_DEPTH=0 (bar ${bar}x)"
            else
                echo "$name: FAIL: $n symbols: a traced step costs ${x}x the instructions of ATLAS_STACK_DEPTH=0 (bar ${bar}x; '-': a run failed or passed ${limit} s)"
                status=1
            fi
        fi
    done
    # what the traced run printed: the report lines a step, and that naming still names
    log=$tmp/log.$n.trace.$s2
    if [ -f "$log" ]; then
        named=$(grep -c ' at [^ ]* (libchurn.so)\| at [^ ]* (churn_lib.c:[0-9]*)' "$log")
        echo "$n symbols: the traced run printed $(grep -c '' "$log") lines, $named naming an allocation or free site in libchurn"
        if [ "$named" -eq 0 ]; then
            echo "$name: FAIL: $n symbols: no report line named a site in libchurn (churn_alloc_N / churn_free_N)"
            status=1
        else
            echo "$name: PASS: $n symbols: the printed lines name their allocation and free sites"
        fi
    fi
    # the unwind cache: 100 call chains meet at one stack address; each is unwound once, then
    # read back from its slots (a list of the chains of one address fell off a cliff at 65:
    # every capture unwound)
    env LD_LIBRARY_PATH="$build/fake:$build/bench/churn$n" LD_PRELOAD="$lib" ATLAS_TRACE=1 \
        ATLAS_LEAKS=1 ATLAS_LOG_LEVEL=info ATLAS_LOG="$tmp/leaks.$n" \
        timeout "$limit" "$bin" 30 $live $launches $churn count >/dev/null 2>&1
    stacks=$(sed -n 's/.*leaks: \([0-9]*\) call stacks taken, \([0-9]*\) of them unwound.*/\1 \2/p' "$tmp/leaks.$n")
    taken=${stacks% *}
    unw=${stacks#* }
    if [ -n "$stacks" ] && [ "$((unw * 10))" -le "$taken" ]; then
        echo "$name: PASS: $n symbols: $unw of $taken call stacks unwound (the rest read from the cache; at most 1 in 10)"
    else
        echo "$name: FAIL: $n symbols: ${unw:-?} of ${taken:-?} call stacks unwound (want at most 1 in 10)"
        status=1
    fi
done
exit $status
