#!/bin/sh
# Hints that run as printed (src/hint.c): each command a report prints is pasted into sh -c, as
# a user pastes it into the shell they ran from, and what it then names is checked.
#   sh tests/integration/test_hints.sh BUILD
set -u
NAME=hints
. "$(dirname "$0")/../harness/scripted.sh"
tool=$build/atlas-trace
lib=$build/libatlastrace.so
sync=$build/tests/sync_target
probe=$build/tests/hint_probe

# hint FILE: the command of the fault report's re-run line
hint() { sed -n 's/^atlas\[[0-9]*\]: fault: re-run with debug sync[^)]*): //p' "$1" | head -n 1; }

# paste WANT DESCRIPTION: runs $cmd with sh -c; its output must hold WANT
paste() {
    sh -c "$cmd" >"$tmp/out" 2>&1
    if grep -qF -- "$1" "$tmp/out"; then ok "$2"; else bad "$2: pasted '$cmd' did not print '$1'"; fi
}

named="debug-sync: launch failed: kernel=oob_write"
summary='^atlas\[[0-9]*\]: summary: '


# 1. through atlas-trace: the atlas-trace command line, the option added before `--`, the
#    setting it inherited in front, the program's arguments quoted
ATLAS_STACK_DEPTH=16 "$tool" --leaks -- "$sync" suspects "it's a test" >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"ATLAS_STACK_DEPTH=16 $tool --leaks --debug-sync=oob_write -- $sync suspects 'it'\\''s a test'")
    paste "$named" "atlas-trace: the re-run is atlas-trace's command line with --debug-sync=oob_write; pasted, it names the launch" ;;
*) bad "atlas-trace: re-run hint is '$cmd'" ;;
esac

# 2. a bare preload by a relative path: LD_PRELOAD becomes absolute, the settings stay
up=$(dirname "$build")
b=$(basename "$build")
(cd "$up" && LD_PRELOAD=$b/libatlastrace.so ATLAS_LEAKS=1 "$b/tests/sync_target" suspects) \
    >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"LD_PRELOAD=$lib ATLAS_LEAKS=1 ATLAS_DEBUG_SYNC_KERNELS=oob_write $b/tests/sync_target suspects")
    cmd="cd '$up' && $cmd"
    paste "$named" "bare preload: LD_PRELOAD by its absolute path, the settings in force; pasted, it names the launch" ;;
*) bad "bare preload: re-run hint is '$cmd'" ;;
esac

# 3. only a graph is rare: debug sync on everything, through atlas-trace
"$tool" "$sync" graph >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"$tool --debug-sync $sync graph") paste "debug-sync: graph launch failed" "graph fault: the re-run syncs each graph launch" ;;
*) bad "graph fault: re-run hint is '$cmd'" ;;
esac

# 4. the program execs another through a shell, with the same settings: re-running the
#    atlas-trace command reaches it again
"$tool" --leaks sh -c "exec $sync suspects" >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"$tool --leaks --debug-sync=oob_write sh -c "*) paste "$named" "exec'd program: the re-run is the atlas-trace command" ;;
*) bad "exec'd program: re-run hint is '$cmd'" ;;
esac

# 5. a child the program starts with settings of its own: its own command line, bare
"$tool" --leaks sh -c "ATLAS_STACK_DEPTH=12 $sync suspects; true" >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"LD_PRELOAD=$lib ATLAS_LEAKS=1 NVTX_INJECTION64_PATH=$lib ATLAS_STACK_DEPTH=12 ATLAS_DEBUG_SYNC_KERNELS=oob_write $sync suspects")
    paste "$named" "child with settings of its own: its own command, with them" ;;
*) bad "child with settings of its own: re-run hint is '$cmd'" ;;
esac

# 6. every setting atlas-trace has an option for, spelled as that option, sets the variable;
#    one it has none for (ATLAS_LIB) goes in front; an option the hint replaces is gone
cat >"$tmp/settings" <<'EOS'
ATLAS_TRACE 1
ATLAS_STEP capture
ATLAS_TRACE_FILE /tmp/atlas-hint-t.jsonl
ATLAS_CHROME_TRACE /tmp/atlas-hint-c.json
ATLAS_REDZONE 64
ATLAS_REDZONE_CHECK launch
ATLAS_D2H_TRACE 5
ATLAS_DEBUG_SYNC_KERNELS 1
ATLAS_DEBUG_SYNC_KERNELS k1,k2
ATLAS_LEAKS 1
ATLAS_KERNEL_AUDIT 1
ATLAS_STATS 1
ATLAS_LOG /tmp/atlas-hint.log
ATLAS_ERROR_EXITCODE 3
ATLAS_ERROR_ON diff
ATLAS_NO_CHILDREN 1
ATLAS_RACES 1
ATLAS_RACES all
ATLAS_LAUNCH_RING 128
ATLAS_LOG_LEVEL error
ATLAS_HANG_SECONDS 30
ATLAS_REDZONE_FILL 7
ATLAS_REDZONE_MIN_IDX 3
ATLAS_REDZONE_TRACE_IDX 2
ATLAS_REDZONE_POOLS keep
ATLAS_REDZONE_QUARANTINE_MB 16
ATLAS_KERNEL ^(k1|k2)$
ATLAS_STACK_DEPTH 8
ATLAS_DIFF_MAX 5
ATLAS_DIFF_IGNORE k1:arg1
ATLAS_DIFF_POINTERS all
ATLAS_DIFF_RESIDUE none
ATLAS_TRACE_MAX_MB 64
ATLAS_CHROME_MAX_MB 8
EOS
echo "ATLAS_LIB $lib" >>"$tmp/settings"
while read -r var value; do
    cmd=$("$tool" "$probe" command "$var" "$value" 2>"$tmp/out")
    # (the probe makes no driver call: run through atlas-trace it ends with the summary line
    # saying so, which is not what it prints)
    got=$(HINT_PROBE_ENV=$var sh -c "$cmd" 2>&1 | grep -v "$summary")
    spelled=$("$tool" "$probe" setting "$var" "$value" 2>/dev/null)
    if [ "$got" = "$var=$value" ] && [ -n "$cmd" ]; then
        case $var in
        ATLAS_LIB) want="$var=$value" ;;
        *) want=--* ;;
        esac
        # shellcheck disable=SC2254 # want is a pattern
        case $spelled in $want) ok "$var=$value: re-run '$cmd', said as '$spelled'" ;;
        *) echo "$spelled" >"$tmp/out"; bad "$var=$value is said as '$spelled'" ;; esac
    else
        echo "$got" >"$tmp/out"
        bad "$var=$value: pasted '$cmd' ran with: $got"
    fi
done <"$tmp/settings"
rm -f /tmp/atlas-hint-t.jsonl /tmp/atlas-hint-c.json /tmp/atlas-hint.log

# an option the user gave for the same setting is replaced, and one from the environment too
cmd=$(ATLAS_REDZONE_CHECK=free "$tool" --redzone=64 --redzone-check=sync "$probe" command \
    ATLAS_REDZONE_CHECK launch 2>/dev/null)
got=$(HINT_PROBE_ENV=ATLAS_REDZONE,ATLAS_REDZONE_CHECK sh -c "$cmd" 2>&1 | grep -v "$summary" |
    tr '\n' ' ')
case "$cmd|$got" in
*--redzone-check=sync* | *ATLAS_REDZONE_CHECK=free*) echo "$cmd" >"$tmp/out"; bad "the replaced setting stays in '$cmd'" ;;
*"|ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ") ok "a setting the user gave is replaced, option or environment: '$cmd'" ;;
*) echo "$got" >"$tmp/out"; bad "replacing a setting: '$cmd' ran with $got" ;;
esac

# without atlas-trace a setting is its variable
spelled=$("$probe" setting ATLAS_REDZONE_CHECK launch)
[ "$spelled" = ATLAS_REDZONE_CHECK=launch ] && ok "bare: a setting is said as ATLAS_REDZONE_CHECK=launch" ||
    { echo "$spelled" >"$tmp/out"; bad "bare: said as '$spelled'"; }
# and under atlas-trace, a variable the user set in the environment is said as one
spelled=$(ATLAS_REDZONE_CHECK=launch "$tool" "$probe" setting ATLAS_REDZONE_CHECK launch)
[ "$spelled" = ATLAS_REDZONE_CHECK=launch ] && ok "atlas-trace: a setting from the environment is said as its variable" ||
    { echo "$spelled" >"$tmp/out"; bad "atlas-trace, from the environment: said as '$spelled'"; }

# 7. the trace's NVTX hint from a bare preload: pasted, NVTX reaches the library and the steps
#    are the program's ranges
steps=$build/tests/trace_steps
LD_PRELOAD=$lib ATLAS_TRACE=1 ATLAS_STEP=nvtx:step "$steps" nvtx 2 >"$tmp/out" 2>&1
cmd=$(sed -n 's/^atlas\[[0-9]*\]: step trace: .* re-run with NVTX_INJECTION64_PATH naming it: //p' "$tmp/out")
case $cmd in
"LD_PRELOAD=$lib ATLAS_TRACE=1 ATLAS_STEP=nvtx:step NVTX_INJECTION64_PATH=$lib $steps nvtx 2")
    paste "trace summary: steps=2 " "NVTX hint: pasted, the steps are the NVTX ranges" ;;
*) bad "NVTX hint is '$cmd'" ;;
esac

# 8. settings that do nothing say so, once, in the user's terms: options through atlas-trace,
#    variables from a bare preload (and from the environment under atlas-trace)
says() { # says LINE DESCRIPTION: the last run's output holds LINE once
    if [ "$(grep -cF -- "$1" "$tmp/out")" = 1 ]; then ok "$2"; else bad "$2: no line '$1'"; fi
}
quiet() { # quiet DESCRIPTION: the last run's output says nothing does nothing
    if grep -q 'nothing without\|was launched (outside graphs)\|captured no graph' "$tmp/out"; then
        bad "$1: a setting that works was said to do nothing"
    else ok "$1"; fi
}
"$tool" --redzone-check=launch "$sync" copies >"$tmp/out" 2>&1
says "--redzone-check=launch does nothing without --redzone (red zones are off)" \
    "--redzone-check without --redzone is said"
"$tool" --redzone=64 --redzone-check=launch "$sync" copies >"$tmp/out" 2>&1
quiet "--redzone-check with --redzone: no note"
"$tool" --error-on=diff "$sync" copies >"$tmp/out" 2>&1
says "--error-on=diff does nothing without --error-exitcode" "--error-on without --error-exitcode is said"
"$tool" --error-exitcode=3 --error-on=diff "$sync" copies >"$tmp/out" 2>&1
says "--error-on=diff does nothing without --trace (no step is recorded" "--error-on=diff without --trace is said"
"$tool" --trace --error-exitcode=3 --error-on=diff "$sync" copies >"$tmp/out" 2>&1
quiet "--error-on=diff with --trace and --error-exitcode: no note"
LD_PRELOAD=$lib ATLAS_REDZONE_MIN_IDX=3 ATLAS_CHROME_MAX_MB=5 "$sync" copies >"$tmp/out" 2>&1
says "ATLAS_REDZONE_MIN_IDX=3 does nothing without ATLAS_REDZONE (red zones are off)" \
    "bare preload: ATLAS_REDZONE_MIN_IDX alone is said"
says "ATLAS_CHROME_MAX_MB=5 does nothing without ATLAS_CHROME_TRACE" "bare preload: ATLAS_CHROME_MAX_MB alone is said"
ATLAS_REDZONE_MIN_IDX=3 "$tool" --redzone-check=sync "$sync" copies >"$tmp/out" 2>&1
says "--redzone-check=sync and ATLAS_REDZONE_MIN_IDX=3 do nothing without --redzone" \
    "atlas-trace: an option and a variable of the environment, each as the user gave it, one line"
"$tool" --redzone=64 --kernel=poke "$sync" copies >"$tmp/out" 2>&1
says "--kernel=poke does nothing without --trace or --redzone-check=launch (it limits the step trace and launch mode)" \
    "--kernel without the step trace or launch mode is said"
"$tool" --redzone=64 --redzone-check=launch --kernel=poke "$sync" copies >"$tmp/out" 2>&1
quiet "--kernel with launch mode: no note"
"$tool" --trace --kernel=poke "$sync" copies >"$tmp/out" 2>&1
quiet "--kernel with --trace: no note"
"$tool" --debug-sync=nosuch,oob_write "$sync" suspects >"$tmp/out" 2>&1
says "debug-sync: --debug-sync=nosuch,oob_write: no kernel named nosuch was launched (outside graphs)" \
    "--debug-sync=K with no kernel K launched is said, the kernel that was is not"
"$tool" --debug-sync=oob_write "$sync" suspects >"$tmp/out" 2>&1
quiet "--debug-sync=K with K launched: no note"
"$tool" --trace=capture "$sync" copies >"$tmp/out" 2>&1
says "step trace: --trace=capture but the program captured no graph" "--trace=capture with nothing captured is said"
"$tool" --trace=capture "$sync" graph >"$tmp/out" 2>&1
quiet "--trace=capture with a capture: no note"

# 9. the red zones' suspects hint: pasted, launch mode on the suspects' kernels names the
#    culprit, through atlas-trace and from a bare preload
rz=$build/tests/redzone_prog
rzhint() { sed -n 's/^atlas\[[0-9]*\]: redzone: launch mode names the culprit ([^)]*); re-run with it: //p' "$1" | head -n 1; }
"$tool" --redzone=64 "$rz" over >"$tmp/out" 2>&1
cmd=$(rzhint "$tmp/out")
case $cmd in
"$tool --redzone=64 --redzone-check=launch '--kernel=^(poke|fill)\$' $rz over")
    paste "redzone: culprit: launch#4 kernel=poke" "red zones through atlas-trace: the re-run in launch mode on the suspects names the culprit" ;;
*) bad "red zones through atlas-trace: re-run hint is '$cmd'" ;;
esac
LD_PRELOAD=$lib ATLAS_REDZONE=64 "$rz" over >"$tmp/out" 2>&1
cmd=$(rzhint "$tmp/out")
case $cmd in
"LD_PRELOAD=$lib ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ATLAS_KERNEL='^(poke|fill)\$' $rz over")
    paste "redzone: culprit: launch#4 kernel=poke" "red zones from a bare preload: the re-run in launch mode on the suspects names the culprit" ;;
*) bad "red zones from a bare preload: re-run hint is '$cmd'" ;;
esac

# a long command line whole (issue #48: the line was cut at about 900 bytes, the program's
# last arguments dropped)
long=$(i=0; while [ $i -lt 60 ]; do printf ' --extra-argument-number-%02d' $i; i=$((i + 1)); done)
# shellcheck disable=SC2086
"$tool" --redzone=64 "$rz" over 1 return 0 $long >"$tmp/out" 2>&1
cmd=$(rzhint "$tmp/out")
case $cmd in
"$tool --redzone=64 --redzone-check=launch '--kernel=^(poke|fill)\$' $rz over 1 return 0$long")
    paste "redzone: culprit: launch#4 kernel=poke" "a re-run hint of ${#cmd} bytes: printed whole, and it runs" ;;
*) bad "a long re-run hint is '$cmd'" ;;
esac

finish
