#!/bin/sh
# Module reload loops, natively and under the preload with no setting: the
# CPU time, peak resident size and heap in use after N cycles of load, look
# up, launch, unload (cpu_bench N cycles), and callgrind's instructions per
# cycle between the counts (time linear in cycles: the same per cycle
# whatever the count; memory flat: the same after any count).
#   run_reload_bench.sh BUILD "5000 20000 40000"
set -eu
BUILD=$1
COUNTS=${2:-5000 20000 40000}
BIN=$BUILD/bench/cpu_bench
LIB=$(realpath "$BUILD/libatlastrace.so")
FAKE=$(realpath "$BUILD/fake")
TMP=$(mktemp -d /tmp/atlas-reloadbench-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

get() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
run() { # native|idle N -> file of its figures
    f=$TMP/$1.$2
    if [ "$1" = native ]; then
        env LD_LIBRARY_PATH="$FAKE" "$BIN" "$2" cycles >"$f"
    else
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" "$BIN" "$2" cycles >"$f" 2>/dev/null
    fi
    echo "$f"
}
have_cg=0
command -v valgrind >/dev/null 2>&1 && have_cg=1
ir() { # native|idle N -> instructions
    f=$TMP/cg.$1.$2
    if [ "$1" = native ]; then
        env LD_LIBRARY_PATH="$FAKE" valgrind --tool=callgrind --callgrind-out-file="$f" \
            "$BIN" "$2" cycles >/dev/null 2>&1
    else
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" valgrind --tool=callgrind \
            --callgrind-out-file="$f" "$BIN" "$2" cycles >/dev/null 2>&1
    fi
    awk '/^summary:/ { print $2 }' "$f"
}

echo "atlastrace module reload loop (fake driver, no GPU): N cycles of load, look up, launch, unload"
printf '%8s %12s %12s %11s %11s %11s %11s %15s %15s\n' cycles "native cpu s" "idle cpu s" \
    "native MB" "idle MB" "native heap" "idle heap" "native instr/c" "idle instr/c"
prev=
for n in $COUNTS; do
    a=$(run native "$n")
    b=$(run idle "$n")
    ni=- ii=-
    if [ $have_cg = 1 ]; then
        echo "$(ir native "$n")" >"$TMP/nir.$n"
        echo "$(ir idle "$n")" >"$TMP/iir.$n"
        if [ -n "$prev" ]; then
            ni=$(awk -v a="$(cat "$TMP/nir.$prev")" -v b="$(cat "$TMP/nir.$n")" -v d=$((n - prev)) \
                'BEGIN { printf "%.1f", (b - a) / d }')
            ii=$(awk -v a="$(cat "$TMP/iir.$prev")" -v b="$(cat "$TMP/iir.$n")" -v d=$((n - prev)) \
                'BEGIN { printf "%.1f", (b - a) / d }')
        fi
    fi
    printf '%8s %12s %12s %11.1f %11.1f %10.1fK %10.1fK %15s %15s\n' "$n" "$(get cpu_s "$a")" \
        "$(get cpu_s "$b")" "$(awk -v k="$(get hwm_kb "$a")" 'BEGIN { print k / 1024 }')" \
        "$(awk -v k="$(get hwm_kb "$b")" 'BEGIN { print k / 1024 }')" "$(get heap_kb "$a")" \
        "$(get heap_kb "$b")" "$ni" "$ii"
    prev=$n
done
echo "(instr/c: instructions per cycle from the previous count to this one)"
[ $have_cg = 1 ] || echo "(valgrind not installed: no instruction counts)"
