#!/bin/sh
# Hints that run as printed (src/hint.c): each command a report prints is pasted into sh -c, as
# a user pastes it into the shell they ran from, and what it then names is checked.
#   sh tests/integration/test_hints.sh BUILD
set -u
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=$build/atlas-trace
lib=$build/libatlastrace.so
sync=$build/tests/sync_target
probe=$build/tests/hint_probe
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-hints.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/    /' "$tmp/out" 2>/dev/null | tail -n 20; }

# nothing of the caller's: the cases say every setting they use
for v in $(env | sed -n 's/^\(ATLAS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD NVTX_INJECTION64_PATH ATLASTRACE_FRONT
export LD_LIBRARY_PATH="$build/fake"

# hint FILE: the command of the fault report's re-run line
hint() { sed -n 's/^atlas\[[0-9]*\]: fault: re-run with debug sync[^)]*): //p' "$1" | head -n 1; }

# paste WANT DESCRIPTION: runs $cmd with sh -c; its output must hold WANT
paste() {
    sh -c "$cmd" >"$tmp/out" 2>&1
    if grep -qF -- "$1" "$tmp/out"; then ok "$2"; else bad "$2: pasted '$cmd' did not print '$1'"; fi
}

named="debug-sync: launch failed: kernel=oob_write"

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
(cd "$root" && LD_PRELOAD=build/libatlastrace.so ATLAS_LEAKS=1 build/tests/sync_target suspects) \
    >"$tmp/out" 2>&1
cmd=$(hint "$tmp/out")
case $cmd in
"LD_PRELOAD=$lib ATLAS_LEAKS=1 ATLAS_DEBUG_SYNC_KERNELS=oob_write build/tests/sync_target suspects")
    cmd="cd '$root' && $cmd"
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
#    one it has none for goes in front; an option the hint replaces is gone
while read -r var value; do
    cmd=$("$tool" "$probe" command "$var" "$value" 2>"$tmp/out")
    got=$(HINT_PROBE_ENV=$var sh -c "$cmd" 2>&1)
    spelled=$("$tool" "$probe" setting "$var" "$value" 2>/dev/null)
    if [ "$got" = "$var=$value" ] && [ -n "$cmd" ]; then
        case $var in
        ATLAS_LAUNCH_RING) want="$var=$value" ;;
        *) want=--* ;;
        esac
        # shellcheck disable=SC2254 # want is a pattern
        case $spelled in $want) ok "$var=$value: re-run '$cmd', said as '$spelled'" ;;
        *) echo "$spelled" >"$tmp/out"; bad "$var=$value is said as '$spelled'" ;; esac
    else
        echo "$got" >"$tmp/out"
        bad "$var=$value: pasted '$cmd' ran with: $got"
    fi
done <<'EOS'
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
ATLAS_LAUNCH_RING 128
EOS
rm -f /tmp/atlas-hint-t.jsonl /tmp/atlas-hint-c.json /tmp/atlas-hint.log

# an option the user gave for the same setting is replaced, and one from the environment too
cmd=$(ATLAS_REDZONE_CHECK=free "$tool" --redzone=64 --redzone-check=sync "$probe" command \
    ATLAS_REDZONE_CHECK launch 2>/dev/null)
got=$(HINT_PROBE_ENV=ATLAS_REDZONE,ATLAS_REDZONE_CHECK sh -c "$cmd" 2>&1 | tr '\n' ' ')
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

echo "hints: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
