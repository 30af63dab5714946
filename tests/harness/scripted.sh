# Sourced by the shell-script suites that run programs under the preload (test_hints.sh,
# test_packages.sh): a scratch folder, PASS/FAIL lines with the output of the case that failed,
# and an environment with nothing of the caller's (no ATLAS_* setting, no preload, no
# atlas-trace command line), the fake driver answering.
#   NAME=hints . tests/harness/scripted.sh BUILD    sets build (absolute), tmp, ok, bad, finish
build=$(cd "${1:-build}" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-$NAME.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
# ok WHAT; bad WHAT: a check passed or failed (then the last lines of $tmp/out are shown)
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/    /' "$tmp/out" 2>/dev/null | tail -n 20; }
# finish: the suite's count line, and its exit status
finish() {
    echo "$NAME: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}

for v in $(env | sed -n 's/^\(ATLAS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD NVTX_INJECTION64_PATH ATLASTRACE_FRONT
export LD_LIBRARY_PATH="$build/fake"
