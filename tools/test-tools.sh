#!/bin/sh
# test-tools.sh FUZZ_CC
#
# Every tool make check needs, installed where missing, before any suite runs: the Check test
# framework (and pkg-config, which gives its flags), valgrind, clang, python3 with venv (the
# wheel's install test, the GPU suite's trace parser), in one package install, then clang's
# libFuzzer runtime, which Debian ships apart (libclang-rt-N-dev, N clang's major version), then
# elfutils' libdw1 (file:line in the reports) where it is missing. One process installs, one
# package at a time: the suites only ask (make check-deps,
# fuzz-deps, rel-valgrind), so no two apt-gets can run at once (a second one fails on dpkg's
# lock). Exit 0 when all are there in the end, else 1 with what to install by hand
# (tools/ensure-deb.sh says how it installs: as root, through sudo, or not at all).
set -u
here=$(dirname "$0")
cc=${1:-clang}

sh "$here/ensure-deb.sh" "make check" \
    "pkg-config --exists check && command -v valgrind && command -v $cc &&
     python3 -c 'import ensurepip, venv'" \
    check pkg-config valgrind clang python3-venv || exit 1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-tools.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$tmp/probe.c"
v=$("$cc" -dumpversion | cut -d. -f1)
sh "$here/ensure-deb.sh" "make check" "$cc -fsanitize=fuzzer $tmp/probe.c -o $tmp/probe" \
    "libclang-rt-$v-dev" || exit 1

# elfutils' libdw.so.1: the reports' file:line (src/symbols.c opens it at run time; the build
# needs nothing of it), which the tests expect. Looked for with the shell alone.
sh "$here/ensure-deb.sh" "make check" \
    'for f in /usr/lib/*/libdw.so.1 /usr/lib64/libdw.so.1 /usr/lib/libdw.so.1; do
         [ -e "$f" ] && exit 0; done; exit 1' \
    libdw1
