# What the real-GPU step-trace scripts share (sourced by run_trace.sh and
# run_programs.sh, after they set build, lib, out and status).
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }

# traced NAME [ENV...] -- CMD...: runs CMD under the preload with
# ATLAS_TRACE=1, the report in $out/NAME.log, the steps in $out/NAME.jsonl
traced() {
    name=$1
    shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    rm -f "$out/$name.log" "$out/$name.jsonl"
    env ATLAS_TRACE=1 ATLAS_LOG="$out/$name.log" ATLAS_TRACE_FILE="$out/$name.jsonl" $envs \
        LD_PRELOAD="$lib" "$@" >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^ok' "$out/$name.out"; then
        fail "$name: exit status $rc"
        tail -n 5 "$out/$name.out" "$out/$name.err" "$out/$name.log"
        return 1
    fi
    return 0
}

oplines() { grep -c ':   op ' "$1"; }
show() { echo "---- $1"; head -20 "$1"; echo "----"; }
