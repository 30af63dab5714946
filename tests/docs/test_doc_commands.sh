#!/bin/sh
# The commands of the documentation, run as written (make docs-check, part of make check).
#
# A block of commands in README.md or docs/*.md that needs no GPU is marked by the line
#
#     <!-- docs-test -->
#
# right before it (an HTML comment: invisible on the rendered page). The block is the indented
# (4 spaces) text that follows. In a man page the mark is the comment line .\" docs-test before
# a .nf ... .fi block (\- and \\ read as - and \). Two forms:
#   - a transcript: lines starting with "$ " are commands, the others their output (not
#     compared: PIDs and addresses vary); "$ echo $?" followed by N says the command before
#     exits N;
#   - otherwise every line is a command (a trailing "\" continues it), each must exit 0.
# Each block runs in a scratch folder whose build/ holds links to everything in the tree's
# build/ (so $PWD/build/... and build/... mean what they mean at the repository root after
# make), with no ATLAS_* setting inherited. The fake driver (build/fake/libcuda.so.1) answers;
# the commands export LD_LIBRARY_PATH=$PWD/build/fake themselves. A file a command writes must
# go under build/ (a user pastes the commands at the repository root, where anything else would
# be left among the sources): the scratch folder must hold nothing else afterwards.
#
# Every other block is checked for the mistakes that made pasted commands fail silently: a
# bare LD_PRELOAD=libatlastrace.so (the loader looks for it in the system folders, finds
# nothing, and runs the program untraced without a word), atlas-trace/atlas-diff without their
# build/ path, links outside the repository, an LD_LIBRARY_PATH given to one command only (a
# command a report prints does not repeat it: pasted, it ran without the fake driver). And the
# programs the documents run, in their commands and text, must be ones `make` builds (make
# docs-check passes their list in DOCS_BUILT: its ALL_TARGETS; run by hand, that is not checked).
#
#   sh tests/docs/test_doc_commands.sh [FILE...]    (default: README.md docs/*.md man/*.1)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ $# -gt 0 ] || set -- README.md docs/*.md man/*.1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "docs: PASS: $1"; }
bad() { fail=$((fail + 1)); echo "docs: FAIL: $1"; }

for v in $(env | sed -n 's/^\(ATLAS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD NVTX_INJECTION64_PATH

# ---- the marked blocks, run -----------------------------------------------------------------
# awk turns each marked block into a shell script (tmp/block-N.sh) and prints
# "N FILE:LINE COMMANDS". A block is read whole first: it is a transcript if any line starts "$ ".
awk -v dir="$tmp" '
FNR == 1 { if (inblock) finish(); armed = 0; man = FILENAME ~ /\.[1-9]$/ }
# a man page: the .nf ... .fi block after the comment line .\" docs-test, troff escapes undone
man && /^\.\\" docs-test$/ { armed = 1; nb++; where = FILENAME ":" FNR; next }
man && armed && /^\.nf/ { armed = 0; inblock = 1; n = 0; next }
man && inblock && /^\.fi/ { finish(); next }
man && inblock { t = $0; gsub(/\\-/, "-", t); gsub(/\\\\/, "\\", t); l[++n] = t; next }
man { next }
/^<!-- docs-test -->$/ { if (inblock) finish(); armed = 1; nb++; where = FILENAME ":" FNR; next }
armed && /^$/ { next }
armed && /^    / { armed = 0; inblock = 1; n = 0 }
armed { armed = 0 }
inblock && /^$/ { l[++n] = ""; next }
inblock && !/^    / { finish(); next }
inblock { l[++n] = substr($0, 5); next }
END { if (inblock) finish() }
function finish(   i, t, c, f, k, want, q, cont, e) {
    inblock = 0
    t = 0
    for (i = 1; i <= n; i++) if (l[i] ~ /^\$ /) t = 1
    f = dir "/block-" nb ".sh"
    # the output shown is compared loosely: PIDs and long hex addresses vary from run to run
    print "set +e\nout=$1\nnorm() { sed -E \047s/atlas\\[[0-9]+\\]/atlas[PID]/g; s/0x[0-9a-f]{6,}/0xADDR/g\047 \"$1\"; }" > f
    k = 0
    cont = 0
    for (i = 1; i <= n; i++) {
        if (cont) { c = c "\n" l[i]; cont = (l[i] ~ /\\$/); if (!cont) cmd[++k] = c; continue }
        if (t && l[i] !~ /^\$ /) {
            # "$ echo $?" then N: the exit status the previous command must have
            if (k > 0 && cmd[k] == "echo $?" && l[i] ~ /^[0-9]+$/) wanted[k - 1] = l[i]
            else if (k > 0 && l[i] != "..." && l[i] != "") {
                e = dir "/exp-" nb "-" k
                print l[i] >> e
                close(e)
                expect[k] = e
            }
            continue
        }
        if (l[i] == "") continue
        c = t ? substr(l[i], 3) : l[i]
        cont = (c ~ /\\$/)
        if (!cont) cmd[++k] = c
    }
    for (i = 1; i <= k; i++) {
        if (cmd[i] == "echo $?") continue
        want = (i in wanted) ? wanted[i] : 0
        q = cmd[i]
        gsub(/\047/, "\047\\\047\047", q)
        print "printf \047$ %s\\n\047 \047" q "\047" >> f
        print "{\n" cmd[i] "\n} </dev/null >\"$out\" 2>&1" >> f
        print "st=$?\ncat \"$out\"" >> f
        print "[ $st -eq " want " ] || { echo \"BLOCK-FAIL: exit $st where the docs say " want "\"; exit 1; }" >> f
        if (i in expect) {
            print "norm \"$out\" >\"$out.n\"; norm " expect[i] " | while IFS= read -r want; do" >> f
            print "    grep -qxF -- \"$want\" \"$out.n\" || { echo \"BLOCK-FAIL: no line: $want\"; exit 1; }" >> f
            print "done || exit 1" >> f
        }
    }
    close(f)
    for (i in cmd) delete cmd[i]
    for (i in wanted) delete wanted[i]
    for (i in expect) delete expect[i]
    print nb, where, k
}' "$@" >"$tmp/blocks"

nblocks=0
while read -r nb where ncmds; do
    nblocks=$((nblocks + 1))
    work="$tmp/run-$nb"
    mkdir -p "$work/build"
    for f in "$root"/build/*; do ln -s "$f" "$work/build/"; done
    if (cd "$work" && sh "$tmp/block-$nb.sh" "$tmp/cmd-out-$nb") >"$tmp/out-$nb" 2>&1; then
        left=$(cd "$work" && ls -A | grep -vx build | tr '\n' ' ')
        if [ -z "$left" ]; then
            ok "$where: $ncmds commands ran as written"
        else
            bad "$where: the commands left files outside build/: $left"
        fi
    else
        bad "$where: a command did not run as written:"
        sed 's/^/    /' "$tmp/out-$nb" | tail -n 30
    fi
done <"$tmp/blocks"
[ "$nblocks" -gt 0 ] || bad "no <!-- docs-test --> block found in $*"

# ---- every block, checked -------------------------------------------------------------------
# Lines of indented blocks (Markdown) and of .nf/.fi blocks (man), with FILE:LINE.
awk '
FILENAME ~ /\.1$/ { if ($0 ~ /^\.nf/) nf = 1; else if ($0 ~ /^\.fi/) nf = 0; else if (nf) print FILENAME ":" FNR ": " $0; next }
/^    / { print FILENAME ":" FNR ": " substr($0, 5) }' "$@" >"$tmp/lines"

# the loader finds a bare name only in the system folders: it must be a path (in a block or in
# the text: a command quoted inline is pasted as well)
if grep -nE 'LD_PRELOAD=("?)libatlastrace|NVTX_INJECTION64_PATH=libatlastrace' "$@" >"$tmp/hits"; then
    bad "LD_PRELOAD names libatlastrace.so without a path (the program runs untraced, silently):"
    sed 's/^/    /' "$tmp/hits"
else
    ok "every LD_PRELOAD names the library by its path"
fi
# in README.md and docs/, the tools as they are after make (a man page names the installed one)
if grep -v '\.1:' "$tmp/lines" | grep -E ':[0-9]+: (\$ )?(atlas-trace|atlas-diff) ' |
    grep -v '(atlastrace)' >"$tmp/hits"; then
    bad "atlas-trace/atlas-diff without build/ (not on PATH after make):"
    sed 's/^/    /' "$tmp/hits"
else
    ok "the tools are run as build/atlas-trace and build/atlas-diff"
fi
# the README is the page a user reads in two minutes (issue #46): at most 200 lines, the rest
# in docs/
n=$(wc -l <README.md)
if [ "$n" -le 200 ]; then ok "README.md is one screen: $n lines"
else bad "README.md has $n lines: at most 200 (the rest goes to docs/)"; fi
if grep -n -e '\.\./shared' -e 'DESIGN\.md' "$@" >"$tmp/hits"; then
    bad "links outside the repository:"
    sed 's/^/    /' "$tmp/hits"
else
    ok "no link leaves the repository"
fi

# the fake driver exported, with an absolute path, never given to one command: a re-run hint
# repeats the command line and the ATLAS_* settings, not what stood in front of the command
awk '{
    line = $0
    sub(/^[^:]*:[0-9]+: /, "", line)
    i = index(line, "LD_LIBRARY_PATH=")
    if (i == 0) next
    before = substr(line, 1, i - 1)
    value = substr(line, i + 16)
    sub(/[ ;].*/, "", value)
    if (before !~ /(^|[;&|] *|^\$ )export +([A-Za-z_][A-Za-z0-9_]*=[^ ]* +)*$/ ||
        value !~ /^("?\$PWD\/|\/)/) print
}' "$tmp/lines" >"$tmp/hits"
if [ -s "$tmp/hits" ]; then
    bad "LD_LIBRARY_PATH given to one command, or not an absolute path (a pasted re-run hint runs without it): export LD_LIBRARY_PATH=\$PWD/build/fake first:"
    sed 's/^/    /' "$tmp/hits"
else
    ok "LD_LIBRARY_PATH is exported, with an absolute path"
fi

# the programs named: build/tests/X, build/examples/X and build/bench/X must be what make builds
# (not a test program of a suite), except in what a tool printed (atlas[PID]: ..., or a report
# line shown without that prefix, indented: "    redzone: ...") and in the make command that
# builds one
if [ -n "${DOCS_BUILT:-}" ]; then
    for t in $DOCS_BUILT; do echo "build/${t#"${DOCS_BUILD:-build}"/}"; done >"$tmp/built"
    grep -nHE 'build/(tests|examples|bench)/[A-Za-z0-9_.-]+' "$@" |
        grep -vE '^[^:]*:[0-9]+: *(\$ )?atlas\[[0-9]+\]:|^[^:]*:[0-9]+: {4,}[a-z][a-z0-9-]*: ' >"$tmp/named"
    : >"$tmp/hits"
    while IFS= read -r l; do
        for p in $(printf '%s\n' "$l" | sed -E 's/make +build\/[A-Za-z0-9_./-]+//g' |
            grep -oE 'build/(tests|examples|bench)/[A-Za-z0-9_.-]+'); do
            grep -qxF "$p" "$tmp/built" || echo "$p: $l" >>"$tmp/hits"
        done
    done <"$tmp/named"
    if [ -s "$tmp/hits" ]; then
        bad "programs that make does not build (replace them, or add them to ALL_TARGETS):"
        cut -c1-200 "$tmp/hits" | sed 's/^/    /'
    else
        ok "every program the documents run is one make builds"
    fi
else
    echo "docs: the programs named were not checked against make's (run make docs-check)"
fi

echo "docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
