#!/bin/sh
# The real-program matrix's runner (tests/gpu/matrix/run_matrix.sh) on this machine, with
# stand-ins: every program is tests/harness/matrix_standin.c (a step that sleeps, timed by the
# matrix's own timed.h, turns included), and atlas-trace a script that runs it slower or faster
# by mode. Checks what needs no GPU: a row's processes take their turns and all end; a cell is
# the ratio to native's blocks (a mode made 1.5x slower reads about 1.5x and FAILs its bar, one
# made faster PASSes); a run that fails is ERR, its turns pass to the others, and the exit
# status is 1.
#   tests/harness/test_matrix.sh BUILD_DIR
set -u
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "matrix-runner: PASS: $*"; }
bad() { echo "matrix-runner: FAIL: $*"; fail=1; }

mkdir -p "$tmp/b/gpu"
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -o "$tmp/b/gpu/matrix_cudart" tests/harness/matrix_standin.c ||
    { echo "matrix-runner: FAIL: the stand-in does not build"; exit 1; }
cp "$tmp/b/gpu/matrix_cudart" "$tmp/b/gpu/matrix_driver"
: >"$tmp/b/gpu/kern.cubin"
# atlas-trace OPTIONS -o LOG -- PROGRAM ...: --trace 1.5x slower, --leaks fails, others 0.8x
cat >"$tmp/b/atlas-trace" <<'EOS'
#!/bin/sh
slow=0.8 failing=0 log=/dev/null
while [ "$1" != "--" ]; do
    case $1 in --trace) slow=1.5 ;; --leaks) failing=1 ;; -o) shift; log=$1 ;; esac
    shift
done
shift
echo "atlas[0]: stand-in" >"$log"
STANDIN_SLOW=$slow STANDIN_FAIL=$failing exec "$@"
EOS
chmod +x "$tmp/b/atlas-trace"

STANDIN_MS=10 MATRIX_ROWS="cudart driver" MATRIX_MODES="idle trace leaks" MATRIX_BLOCKS=7 MATRIX_ROUNDS=2 \
    MATRIX_OUT="$tmp/out" MATRIX_TIMEOUT=60 MATRIX_READY_WAIT=30 MATRIX_TURNS_LOG="$tmp/turns.log" \
    timeout 240 sh tests/gpu/matrix/run_matrix.sh "$tmp/b" >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 1 ] && ok "exit status 1 (a FAIL and an ERR)" || bad "exit status $rc, not 1"
for row in cudart driver; do
    line=$(grep "^$row " "$tmp/out/matrix.txt" 2>/dev/null)
    [ -n "$line" ] || { bad "$row: no row in the table"; continue; }
    idle=$(echo "$line" | awk -F'|' '{ print $2 }')
    trace=$(echo "$line" | awk -F'|' '{ print $3 }')
    leaks=$(echo "$line" | awk -F'|' '{ print $4 }')
    xi=${idle%%x*}; xt=${trace%%x*}
    awk -v x="$xi" 'BEGIN { exit !(x >= 0.65 && x <= 0.95) }' && echo "$idle" | grep -q PASS &&
        ok "$row: idle made 0.8x reads$idle" || bad "$row: idle made 0.8x reads '$idle'"
    awk -v x="$xt" 'BEGIN { exit !(x >= 1.3 && x <= 1.7) }' && echo "$trace" | grep -q FAIL &&
        ok "$row: --trace made 1.5x reads$trace" || bad "$row: --trace made 1.5x reads '$trace'"
    echo "$leaks" | grep -q ERR && ok "$row: a run that fails reads$leaks" ||
        bad "$row: a failing run reads '$leaks'"
done
# every run that could, ended with its blocks: 2 rows x 2 rounds x 3 (native, idle, trace)
n=$(grep -c 'rc=0 .*blocks: [0-9.]* [0-9.]* [0-9.]* [0-9.]* [0-9.]* [0-9.]* [0-9.]*$' "$tmp/out/runs.txt" 2>/dev/null)
[ "$n" = 12 ] && ok "12 runs timed 7 blocks each in turns" || bad "$n runs of 12 timed their 7 blocks"
# the turns, group by group: taken in order, slot k by process k mod 4 (native, idle, trace,
# leaks; leaks ended at once, so its slots passed to the next), 7 blocks of each of the 3
v=$(awk '{ if (!($1 in last)) { last[$1] = -1; groups++ }
           if ($2 <= last[$1] || $2 % 4 != $3 || $3 == (0 + substr($1, length($1)) + 2) % 4) bad++
           last[$1] = $2; n[$1]++ }
         END { for (g in n) if (n[g] != 21) bad++; print groups + 0, bad + 0 }' "$tmp/turns.log" 2>/dev/null)
[ "$v" = "4 0" ] && ok "4 groups took their 21 turns in order, each by its process" ||
    bad "the turns (groups, faults): '$v'"
[ $fail -eq 0 ] || { echo "---- the runner's output"; cat "$tmp/log"; cat "$tmp/out/runs.txt" 2>/dev/null; }
[ $fail -eq 0 ] && echo "matrix-runner: all passed" || echo "matrix-runner: FAILED"
exit $fail
