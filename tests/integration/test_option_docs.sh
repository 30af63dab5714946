#!/bin/sh
# atlas-trace's options are made from the settings table (src/config.def): its parser and its
# --help by the code itself; the documentation that describes them is checked against the table
# here, so that no hand-kept list of options can drift from it:
#   - man/atlas-trace.1: each option has an entry in OPTIONS (.TP) naming the variable it sets,
#     and no entry names an option atlas-trace does not have;
#   - docs/front.md: the same for the rows of its table of options (`option | sets | ...`);
#   - atlas-trace --help lists each option;
#   - docs/settings.md's table of settings has a row for each setting of the table.
#   sh tests/integration/test_option_docs.sh BUILD
set -u
NAME=option-docs
. "$(dirname "$0")/../harness/scripted.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
man=$root/man/atlas-trace.1
front=$root/docs/front.md

"$build/tests/option_rows" >"$tmp/rows" || { bad "option_rows did not run"; finish; exit 1; }
grep -- '^-' "$tmp/rows" >"$tmp/options"
"$build/atlas-trace" --help >"$tmp/help"

# the option words of a line: --name and -x, with troff's \- read as -
words() { sed 's/\\-/-/g' | grep -oE -- '(^|[^A-Za-z0-9-])--?[A-Za-z0-9][A-Za-z0-9-]*' | sed 's/^[^-]*//'; }

# man: OPTIONS' entries, one file each (entry-N), its tag line first
awk -v dir="$tmp" '
/^\.SH / { inopt = ($2 == "OPTIONS"); body = 0; next }
inopt && /^\.TP/ { n++; getline; print > (dir "/man-" n); body = 1; next }
inopt && /^\.(PP|SH)/ { body = 0; next }
inopt && body { print >> (dir "/man-" n) }
' "$man"
# front.md: the rows of the table under "## Options", one file each, the option cell first
awk -v dir="$tmp" '
/^## / { inopt = ($0 == "## Options"); next }
inopt && /^\| `/ { n++; split($0, c, "|"); print c[2] > (dir "/front-" n); print $0 >> (dir "/front-" n) }
' "$front"

# documented OPTION VAR FILES...: an entry whose tag (first line) has OPTION mentions VAR
documented() {
    opt=$1 var=$2
    shift 2
    for f in "$@"; do
        [ -f "$f" ] || continue
        if head -n 1 "$f" | words | grep -qxF -- "$opt"; then
            grep -qF -- "$var" "$f" && return 0
        fi
    done
    return 1
}

while read -r opt var; do
    if documented "$opt" "$var" "$tmp"/man-*; then ok "man page: $opt, with $var"
    else echo "no .TP entry naming $opt and $var in OPTIONS" >"$tmp/out"; bad "man page: $opt ($var)"; fi
    if documented "$opt" "$var" "$tmp"/front-*; then ok "docs/front.md: $opt, with $var"
    else echo "no row of the Options table naming $opt and $var" >"$tmp/out"; bad "docs/front.md: $opt ($var)"; fi
    if sed -n 's/^  \(-[^ ]*\( [^ ][^ ]*\)*\).*/\1/p' "$tmp/help" | words | grep -qxF -- "$opt"; then
        ok "--help: $opt"
    else cp "$tmp/help" "$tmp/out"; bad "--help does not list $opt"; fi
done <"$tmp/options"

# and nothing more: every option the documents name is one atlas-trace has
known() { [ "$1" = -h ] || [ "$1" = --help ] || [ "$1" = -V ] || [ "$1" = --version ] ||
    cut -d' ' -f1 "$tmp/options" | grep -qxF -- "$1"; }
for f in "$tmp"/man-* "$tmp"/front-*; do
    [ -f "$f" ] || continue
    for w in $(head -n 1 "$f" | words); do
        if known "$w"; then :; else
            head -n 1 "$f" >"$tmp/out"
            bad "$(basename "$f" | sed 's/-.*//'): $w is documented but atlas-trace has no such option"
        fi
    done
done
[ "$(ls "$tmp"/man-* 2>/dev/null | wc -l)" -gt 10 ] || bad "man page: OPTIONS not found"
[ "$(ls "$tmp"/front-* 2>/dev/null | wc -l)" -gt 10 ] || bad "docs/front.md: the Options table not found"

# docs/settings.md: a row of the settings table for every setting
sed -n 's/^setting //p' "$tmp/rows" | while read -r var; do
    if grep -q "^| \`$var\` |" "$root/docs/settings.md"; then echo "ok $var"; else echo "missing $var"; fi
done >"$tmp/settings"
if grep -q '^missing' "$tmp/settings"; then
    grep '^missing' "$tmp/settings" >"$tmp/out"
    bad "docs/settings.md: settings without a row in its table"
else
    ok "docs/settings.md: every setting has a row ($(wc -l <"$tmp/settings") settings)"
fi
finish
