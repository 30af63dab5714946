#!/bin/sh
# check-verdict.sh MAKE SUITE...
#
# Runs the make check suites (in parallel, as make's -j says, each suite's output kept together
# by --output-sync) and ends with one line that is the verdict:
#
#   make check: 14 suites, 421 checks, all passed in 250 s
#   make check: FAILED: fuzz-check (1 of 14 suites; 421 checks, 0 failed) in 480 s
#
# Every suite's own lines stay visible above it (CI reads Check's closing lines). Checks are
# counted from what the suites print: Check's "Checks: N, Failures: F, Errors: E", the scripts'
# "N passed, M failed" and "SUITE: PASS: ..." / "SUITE: FAIL: ..." lines. The exit status is
# make's: non-zero when any suite failed.
set -u
if [ $# -lt 2 ]; then
    echo "usage: check-verdict.sh MAKE SUITE..." >&2
    exit 2
fi
make_cmd=$1
shift
nsuites=$#
start=$(date +%s)
log=$(mktemp "${TMPDIR:-/tmp}/atlas-check.XXXXXX")
trap 'rm -f "$log" "$log.rc"' EXIT

# -k: every suite runs even after one fails, so the verdict names all that failed.
{
    $make_cmd --no-print-directory -k --output-sync=target "$@"
    echo $? >"$log.rc"
} 2>&1 | tee "$log"
rc=$(cat "$log.rc" 2>/dev/null || echo 1)
secs=$(($(date +%s) - start))

# checks and failures, summed over every form the suites print
counts=$(awk '
    /Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
        for (i = 1; i < NF; i++) {
            if ($i == "Checks:") n += $(i + 1)
            if ($i == "Failures:" || $i == "Errors:") f += $(i + 1)
        }
        next
    }
    / [0-9]+ passed, [0-9]+ failed/ {
        for (i = 2; i <= NF; i++) {
            if ($i == "passed,") n += $(i - 1)
            if ($i ~ /^failed/) { n += $(i - 1); f += $(i - 1) }
        }
        next
    }
    /^[a-z0-9-]+: PASS: / { n++; next }
    /^[a-z0-9-]+: FAIL: / { n++; f++ }
    END { print n + 0, f + 0 }' "$log")
nchecks=${counts% *}
nfailed=${counts#* }

# the suites that failed, or were not run because something they need failed to build:
#   make: *** [mk/trace.mk:26: trace-check] Error 1
#   make: Target 'trace-check' not remade because of errors.
failed=""
nfs=0
for s in "$@"; do
    if grep -q -e "\*\*\* \[[^]]*: $s\] Error" -e "Target '$s' not remade" "$log"; then
        failed="$failed${failed:+, }$s"
        nfs=$((nfs + 1))
    fi
done

if [ "$rc" -eq 0 ] && [ "$nfailed" -eq 0 ]; then
    echo "make check: $nsuites suites, $nchecks checks, all passed in $secs s"
    exit 0
fi
echo "make check: FAILED: ${failed:-a step outside the suites} ($nfs of $nsuites suites;" \
    "$nchecks checks, $nfailed failed) in $secs s"
[ "$rc" -ne 0 ] && exit "$rc"
exit 1
