#!/bin/sh
# The layering of docs/ARCHITECTURE.md: calls go from the hooks to the
# engine, from the engine to the features, and from anyone to the facts,
# never back. Each file is in one room:
#   hooks     hooks/*.c
#   engine    src/engine.c, src/api.c
#   features  one room per feature of the engine's table (src/engine.h):
#             fault, blocking, kaudit, redzone, leaks, trace, hang, races
#   model     the step model that atlas-diff links too: src/step.c, src/stepseries.c, src/jsonw.h, src/jsonesc.h,
#             src/tracediff.c, src/tracejson.c, src/traceformat.h
#   facts     every other file of src/ (what several rooms share)
#   floor     the facts every other file stands on, which call only each other: the log
#             (src/log.c), the library's own exits and errors (src/self.c), the settings
#             (src/config.c, src/hint.c, src/envedit.c) and the C library's dlsym
#             (src/realdl.c); a report's frames and its findings are above them
# Checked:
#   1. Only src/engine.c, src/api.c and hooks/ include engine.h; a file of
#      src/ includes only headers of rooms it may call (below; a header's
#      room is its .c file's: ring.h is the flight recorder's).
#   2. Every call (an undefined symbol of an object of src/, found defined by
#      another object of src/ or hooks/) goes where its room may call:
#        engine    anywhere but the hooks
#        a feature its own files, the model, the facts
#        a fact    the model, the facts, the floor
#        the floor the floor
#        the model the model, and src/stack.c (the demangler): nothing of the
#                  live process (the driver, the ledger, /proc/self/maps)
#      (a feature that calls into the engine, another feature or the hooks,
#      or a fact that calls a feature, fails here even without including
#      their headers; a plain dlsym call is one into hooks/resolve.c, whose
#      dlsym the library exports)
#   3. Per-thread state is a field of struct atl_thread (src/thread.h): no
#      other file-scope __thread variable in src/ (a function's own scratch
#      buffer may stay). The step trace keeps its cold per-thread state in
#      dynamic TLS (about 130 bytes that only threads ending steps or pushing
#      NVTX ranges touch): one struct in src/tracestep.c (the thread's label
#      and open step), one in src/nvtx.c (its NVTX depths), and nothing in
#      initial-exec TLS.
#   4. No circle of calls of more than two files, but inside one feature's
#      module.
#   5. A feature cut as a straight stack (stacks, below: the step trace)
#      calls and includes only down it: each file only files after it in its
#      list, never one before it (no circle inside the module either).
# Usage: test_layers.sh BUILD_DIR
set -u
build=${1:-build}
fail=0

# The room of an object or source file, by its base name.
room() {
    case $1 in
    engine | api) echo engine ;;
    hooks | resolve) echo hooks ;;
    faultrep | flight | ring) echo feature:fault ;;
    blocking) echo feature:blocking ;;
    kaudit) echo feature:kaudit ;;
    redzone | redzone_gpu | redzone_internal | redzone_check | redzone_quar | redzone_report | pools) echo feature:redzone ;;
    leaks) echo feature:leaks ;;
    trace | tracebuf | tracestep | nvtx | chrome) echo feature:trace ;;
    hang) echo feature:hang ;;
    races | races_*) echo feature:races ;;
    step | stepseries | tracediff | tracejson | jsonw | jsonesc | traceformat) echo model ;;
    log | self | services | config | hint | envedit | realdl) echo floor ;;
    *) echo fact ;;
    esac
}

# May an object of room $1 (base name $3) call one of room $2 (base name $4)?
allowed() {
    case $1:$2 in
    hooks:*) return 0 ;;
    engine:hooks) return 1 ;;
    engine:*) return 0 ;;
    model:model) return 0 ;;
    model:*) [ "$4" = stack ] ;;
    *:engine | *:hooks) return 1 ;;
    floor:floor) return 0 ;;
    floor:*) return 1 ;;
    *:model | *:fact | *:floor) return 0 ;;
    fact:*) return 1 ;;
    feature:*) [ "$1" = "$2" ] ;;
    *) return 1 ;;
    esac
}

# The features cut as straight stacks, top first, one a line: a file calls (and includes the
# header of) only files after it on its line. The step trace: its events and lifecycle, NVTX
# ranges, steps and step ends, the per-thread buffers, the Chrome trace.
stacks='trace nvtx tracestep tracebuf chrome'

# "LINE POS" of base name $1 in stacks; nothing when it is in none.
stack_pos() {
    echo "$stacks" | awk -v f="$1" '{ for (i = 1; i <= NF; i++) if ($i == f) print NR, i }'
}

# Does base name $1 come after base name $2 in one stack (a call or include from $1 to $2
# runs up it)? False when they are not in one stack.
stack_up() {
    p=$(stack_pos "$1") && q=$(stack_pos "$2") && [ -n "$p" ] && [ -n "$q" ] &&
        [ "${p% *}" = "${q% *}" ] && [ "${p#* }" -gt "${q#* }" ]
}

# The stack of base name $1, as its line reads.
stack_line() {
    p=$(stack_pos "$1")
    echo "$stacks" | sed -n "${p% *}p"
}

for f in src/*.c src/*.h; do
    from=$(basename "${f%.*}")
    rf=$(room "$from")
    for h in $(sed -n 's/^#include "\([a-z_]*\)\.h".*/\1/p' "$f"); do
        [ "$h" = "$from" ] && continue
        if stack_up "$from" "$h"; then
            echo "FAIL: $f includes $h.h, above it in its stack ($(stack_line "$from"), top first)"
            fail=1
        fi
        # the model shares one constant with the settings' checks (ATL_IGNORE_MAX)
        [ "$rf" = model ] && [ "$h" = config ] && continue
        # the floor may include a header that defines no functions of a .c file (events.h: the
        # atl_on bits the library's own errors set; dsk.h: a header-only parser)
        [ "$rf" = floor ] && [ ! -f "src/$h.c" ] && continue
        rh=$(room "$h")
        allowed "$rf" "$rh" "$from" "$h" && continue
        if [ "$h" = engine ]; then
            echo "FAIL: $f includes engine.h (a feature includes events.h and services.h)"
        else
            echo "FAIL: $f ($rf) includes $h.h ($rh)"
        fi
        fail=1
    done
done

defs=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$defs" "$edges"' EXIT
for o in "$build"/src/*.o "$build"/hooks/*.o; do
    [ -f "$o" ] || continue
    nm --defined-only "$o" | awk -v o="$(basename "$o" .o)" '$2 ~ /^[TDBCRGV]$/ {print $3, o}'
done | sort >"$defs"
grep -q ' engine$' "$defs" || { echo "FAIL: no symbols in $build/src/engine.o"; exit 1; }
calls=0
for o in "$build"/src/*.o; do
    from=$(basename "$o" .o)
    rf=$(room "$from")
    bad=$(nm -u "$o" | awk '{print $2}' | sort | join - "$defs" | while read -r sym to; do
        [ "$to" = "$from" ] && continue
        rt=$(room "$to")
        # a call between two files of one feature stays inside its module
        case $rf in feature:*) [ "$rf" = "$rt" ] || echo "$from $to" >>"$edges" ;; *) echo "$from $to" >>"$edges" ;; esac
        allowed "$rf" "$rt" "$from" "$to" || echo "$sym ($to.o, $rt)"
        [ "$rf" = "$rt" ] && stack_up "$from" "$to" && echo "$sym ($to.o, up its stack)"
    done | tr '\n' ' ')
    calls=$((calls + 1))
    if [ -n "$bad" ]; then
        echo "FAIL: $from.o ($rf) calls $bad"
        fail=1
    fi
done

# No circle of calls of more than two files, but inside one feature's module (tsort names
#    each loop it meets, a file a line; a pair that calls each other, as the hooks and their
#    resolver do, is allowed)
loops=$(sort -u "$edges" | tsort 2>&1 >/dev/null | awk '
    /input contains a loop/ { if (n > 2) print list; n = 0; list = ""; next }
    { sub(/^tsort: /, ""); n++; list = list " " $0 }
    END { if (n > 2) print list }')
if [ -n "$loops" ]; then
    echo "$loops" | while read -r l; do echo "FAIL: a circle of calls across modules:$l"; done
    fail=1
fi

# every feature of the engine's table is a room of its own above (a new
# feature's file left out would pass for a fact, and its calls unchecked)
for init in $(sed -n '/feature_init\[ATL_FEAT_COUNT\]/,/^};/p' src/engine.c |
    grep -o 'atl_[a-z]*_init'); do
    obj=$(awk -v s="$init" '$1 == s {print $2}' "$defs")
    case $(room "$obj") in
    feature:*) ;;
    *)
        echo "FAIL: $init (the engine's table) is defined in $obj.o, which room() does not name a feature"
        fail=1
        ;;
    esac
done

for f in src/tracestep.c src/nvtx.c; do
    n=$(grep -cE '^(static )?__thread' "$f")
    if [ "$n" != 1 ] || grep -nE '^(static )?__thread.*initial-exec' "$f"; then
        echo "FAIL: $f keeps $n file-scope __thread declarations (one struct of its own, in dynamic TLS)"
        fail=1
    fi
done
for f in src/*.c src/*.h; do
    case "$f" in src/thread.[ch] | src/tracestep.c | src/nvtx.c) continue ;; esac
    if grep -nE '^(static )?__thread' "$f"; then
        echo "FAIL: $f keeps per-thread state of its own (a field of struct atl_thread instead)"
        fail=1
    fi
done

[ $fail = 0 ] && echo "layers: $calls objects: no call runs back up (engine <- feature, feature <- feature, hooks <- src, feature <- fact, fact <- floor, live process <- model, up a feature's stack: $stacks), no circle across modules; one per-thread struct"
exit $fail
