#!/bin/sh
# Golden-output tests of the main reports (make golden-check).
#   tests/golden/run_golden.sh BUILD_DIR [--update]
# Each case of tests/golden/cases runs a target program under the preload
# against the fake driver; its report, normalised (normalise.sed), must equal
# tests/golden/NAME.out line for line, so a line added, lost or reworded
# fails. --update rewrites the .out files (review the diff before committing).
build=${1:-build}
update=${2:-}
here=tests/golden
lib=$(realpath "$build/libatlastrace.so")
fake=$(realpath "$build/fake")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
# the cases say every setting they use: none comes from the caller's environment
for v in $(env | sed -n 's/^\(ATLAS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
while IFS='|' read -r name settings cmd; do
    case $name in '#'* | '') continue ;; esac
    # shellcheck disable=SC2086 # settings and cmd are word lists
    set -- $cmd
    prog=$build/tests/$1
    shift
    (cd "$tmp" && env $settings ATLAS_LOG="$tmp/$name.log" \
        LD_LIBRARY_PATH="$fake" LD_PRELOAD="$lib" "$OLDPWD/$prog" "$@" >/dev/null 2>&1)
    touch "$tmp/$name.log"
    # and where the tree is and the case's scratch folder (a re-run hint names the program and
    # the library by their paths, and the settings in force, ATLAS_LOG among them)
    sed -E -f $here/normalise.sed -e "s|$PWD/|ROOT/|g" -e "s|$tmp/|TMP/|g" "$tmp/$name.log" \
        >"$tmp/$name.out"
    if [ "$update" = "--update" ]; then
        cp "$tmp/$name.out" "$here/$name.out"
        echo "golden: updated $name ($(wc -l <"$here/$name.out") lines)"
    elif [ -f "$here/$name.out" ] && diff -u "$here/$name.out" "$tmp/$name.out" >"$tmp/$name.diff"; then
        echo "golden: PASS: $name"
        pass=$((pass + 1))
    else
        echo "golden: FAIL: $name (expected - got +):"
        if [ -f "$here/$name.out" ]; then cat "$tmp/$name.diff"; else echo "  no $here/$name.out"; fi
        failed=$((failed + 1))
    fi
done <$here/cases
[ "$update" = "--update" ] && exit 0
[ $failed -eq 0 ]
