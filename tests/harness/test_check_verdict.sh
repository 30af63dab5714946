#!/bin/sh
# Tests tools/check-verdict.sh, make check's last line, with a stand-in make that prints what
# the suites print: Check's summaries, a script's "N passed, N failed", "suite: PASS:" lines,
# and make's own lines for a suite that failed or could not be built.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-verdict.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/    /' "$tmp/out"; }

# fake-make MODE: prints the suites' lines; MODE=fail adds a failing suite and one not built
cat >"$tmp/fake-make" <<'EOS'
#!/bin/sh
echo "100%: Checks: 45, Failures: 0, Errors: 0"
echo "install: 7 passed, 0 failed"
echo "front-install: PASS: make install put every file in place"
echo "front-install: PASS: make uninstall removed every installed file"
if [ "$MODE" = fail ]; then
    echo "95%: Checks: 20, Failures: 1, Errors: 0"
    echo "make: *** [mk/trace.mk:26: trace-check] Error 1" >&2
    echo "make: Target 'fuzz-check' not remade because of errors." >&2
    exit 2
fi
exit 0
EOS
chmod +x "$tmp/fake-make"

MODE=ok sh "$root/tools/check-verdict.sh" "$tmp/fake-make" core-check trace-check fuzz-check \
    >"$tmp/out" 2>&1
rc=$?
last=$(tail -n 1 "$tmp/out")
case $last in
"make check: 3 suites, 54 checks, all passed in "*" s") ok "all passed: $last" ;;
*) bad "all passed: last line is '$last'" ;;
esac
[ $rc -eq 0 ] && ok "all passed: exit 0" || bad "all passed: exit $rc"
grep -q "^100%: Checks: 45, Failures: 0, Errors: 0$" "$tmp/out" && ok "the suites' lines stay" ||
    bad "the suites' lines are gone"

MODE=fail sh "$root/tools/check-verdict.sh" "$tmp/fake-make" core-check trace-check fuzz-check \
    >"$tmp/out" 2>&1
rc=$?
last=$(tail -n 1 "$tmp/out")
case $last in
"make check: FAILED: trace-check, fuzz-check (2 of 3 suites; 74 checks, 1 failed) in "*" s")
    ok "a failure: $last" ;;
*) bad "a failure: last line is '$last'" ;;
esac
[ $rc -ne 0 ] && ok "a failure: exit $rc" || bad "a failure: exit 0"

echo "verdict: $pass passed, $fail failed"
[ $fail -eq 0 ]
