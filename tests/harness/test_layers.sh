#!/bin/sh
# The engine's layering (docs/ARCHITECTURE.md, "Who may include src/engine.h"):
# calls go from the engine to the features, never back.
#   1. Only src/engine.c, src/api.c and hooks/ include engine.h.
#   2. No object of src/ but engine.o and api.o uses a symbol engine.o defines
#      (a feature that calls into the engine, or reads its data, fails here
#      even without including engine.h).
#   3. Per-thread state is a field of struct atl_thread (src/thread.h): no
#      other file-scope __thread variable in src/ (a function's own scratch
#      buffer may stay). src/trace.c keeps one struct of its own in dynamic
#      TLS (about 130 bytes that only threads ending steps touch; see there):
#      exactly one, and nothing in initial-exec TLS.
# Usage: test_layers.sh BUILD_DIR
set -u
build=${1:-build}
fail=0

allowed='src/engine.c src/api.c'
for f in src/*.c src/*.h; do
    grep -q '^#include "engine.h"' "$f" || continue
    case " $allowed " in *" $f "*) continue ;; esac
    echo "FAIL: $f includes engine.h (a feature includes events.h and services.h)"
    fail=1
done

eng=$(mktemp)
trap 'rm -f "$eng"' EXIT
nm --defined-only "$build/src/engine.o" | awk '$2 ~ /^[TDBCRG]$/ {print $3}' | sort >"$eng"
[ -s "$eng" ] || { echo "FAIL: no symbols in $build/src/engine.o"; exit 1; }
for o in "$build"/src/*.o; do
    case "$o" in */engine.o | */api.o) continue ;; esac
    used=$(nm -u "$o" | awk '{print $2}' | sort | comm -12 - "$eng" | tr '\n' ' ')
    if [ -n "$used" ]; then
        echo "FAIL: $o uses the engine's $used"
        fail=1
    fi
done

n=$(grep -cE '^(static )?__thread' src/trace.c)
if [ "$n" != 1 ] || grep -nE '^(static )?__thread.*initial-exec' src/trace.c; then
    echo "FAIL: src/trace.c keeps $n file-scope __thread declarations (one struct of its own, in dynamic TLS)"
    fail=1
fi
for f in src/*.c src/*.h; do
    case "$f" in src/thread.[ch] | src/trace.c) continue ;; esac
    if grep -nE '^(static )?__thread' "$f"; then
        echo "FAIL: $f keeps per-thread state of its own (a field of struct atl_thread instead)"
        fail=1
    fi
done

[ $fail = 0 ] && echo "layers: no feature includes engine.h or calls into engine.c; one per-thread struct"
exit $fail
