#!/bin/sh
# make install into a temporary DESTDIR, build the example against the installed pkg-config
# file, check what atlas-trace finds there, then make uninstall must leave no file behind.
#   sh tests/integration/front_install.sh MAKE BUILD
set -eu
MAKE=${1:-make}
BUILD=${2:-build}
tmp=$(mktemp -d /tmp/atlas-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "front-install: FAIL: $*"; exit 1; }

# A folder of the prefix that holds someone else's file before install: it stays.
mkdir -p "$tmp/usr/share/man/man1"
echo other >"$tmp/usr/share/man/man1/other.1"

$MAKE --no-print-directory -s install DESTDIR="$tmp" PREFIX=/usr BUILD="$BUILD" >/dev/null 2>"$tmp.err" ||
    { cat "$tmp.err"; fail "make install failed"; }
# a make run by make shares its jobs: no "-jN forced in makefile: resetting jobserver mode"
! grep -i jobserver "$tmp.err" || fail "the sub-make reset the jobserver"
rm -f "$tmp.err"
for f in usr/bin/atlas-trace usr/bin/atlas-diff usr/lib/libatlastrace.so usr/lib/libatlaslaunch.so \
         usr/lib/libatlaslaunch.a usr/include/atlas/launch.h usr/lib/pkgconfig/atlaslaunch.pc \
         usr/share/man/man1/atlas-trace.1 usr/share/man/man1/atlas-diff.1; do
    [ -f "$tmp/$f" ] || fail "make install did not install /$f"
done
[ -x "$tmp/usr/bin/atlas-trace" ] || fail "/usr/bin/atlas-trace is not executable"
echo "front-install: PASS: make install DESTDIR=... PREFIX=/usr put every file in place"

# The licence, the README and every document the reports point to, as in the tree.
doc=usr/share/doc/atlastrace
for f in LICENSE README.md docs/*.md docs/findings.schema.json; do
    cmp -s "$f" "$tmp/$doc/$f" || fail "make install did not install $f as /$doc/$f"
done
echo "front-install: PASS: the licence, the README and docs/ are in /$doc"

# The .pc file says prefix=/usr; the staged tree is that prefix moved under $tmp.
cflags=$(PKG_CONFIG_PATH="$tmp/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$tmp/usr" \
         --cflags atlaslaunch)
libs=$(PKG_CONFIG_PATH="$tmp/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$tmp/usr" \
       --libs atlaslaunch)
case "$cflags" in *"-I$tmp/usr/include"*) ;; *) fail "pkg-config --cflags: $cflags" ;; esac
# Only the installed headers and library: the source tree's include/ is not on the line, nor a
# libcuda of our own: pkg-config --libs must find one itself (the toolkit's stubs/ on a machine
# without a driver, as this one). A toolkit of headers only (all the build needs: a fresh
# machine given cuda.h) has no stub to name; the fake driver's libcuda stands in for the link.
case $libs in
*/stubs/*) cuda_link= ;;
*) cuda_link=$(cd "$BUILD/fake" && pwd) ;;
esac
LIBRARY_PATH=$cuda_link ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -o "$tmp/launch_saxpy" \
    examples/launch_saxpy.c $cflags $libs \
    || fail "examples/launch_saxpy.c does not build against the installed atlaslaunch.pc ($libs)"
nm -D "$tmp/launch_saxpy" | grep -q ' U atlas_launch' \
    || fail "launch_saxpy does not use libatlaslaunch.so"
echo "front-install: PASS: examples/launch_saxpy.c builds with pkg-config --cflags --libs atlaslaunch"

# It starts without LD_LIBRARY_PATH naming the prefix: the run path finds libatlaslaunch.so.
# (Only the driver comes from LD_LIBRARY_PATH: this machine has none, the fake stands in.)
out=$(LD_LIBRARY_PATH="$BUILD/fake" "$tmp/launch_saxpy" 2>&1) || true
case $out in
*"error while loading shared libraries"*) fail "the installed launch_saxpy does not start: $out" ;;
esac
LD_LIBRARY_PATH="$BUILD/fake" ldd "$tmp/launch_saxpy" | grep -q "libatlaslaunch.so => $tmp/usr/lib/" \
    || fail "launch_saxpy does not load the installed libatlaslaunch.so: $(ldd "$tmp/launch_saxpy")"
echo "front-install: PASS: a program linked by pkg-config runs without LD_LIBRARY_PATH for the prefix"

# The installed tool finds the installed library (bin/../lib).
out=$("$tmp/usr/bin/atlas-trace" "$BUILD/tests/front_env" env)
echo "$out" | grep -qx "LD_PRELOAD=$tmp/usr/lib/libatlastrace.so" \
    || fail "installed atlas-trace preloads: $(echo "$out" | grep LD_PRELOAD)"
man -l "$tmp/usr/share/man/man1/atlas-trace.1" >/dev/null 2>&1 || [ ! -x "$(command -v man)" ] \
    || fail "man cannot read the installed atlas-trace.1"
echo "front-install: PASS: the installed atlas-trace preloads the installed library"

$MAKE --no-print-directory -s uninstall DESTDIR="$tmp" PREFIX=/usr BUILD="$BUILD" >/dev/null
rm -f "$tmp/launch_saxpy"
left=$(find "$tmp" -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "$tmp/usr $tmp/usr/share $tmp/usr/share/man $tmp/usr/share/man/man1 $tmp/usr/share/man/man1/other.1 " ] \
    || fail "make uninstall left: $left"
echo "front-install: PASS: make uninstall removed every installed file and the folders it created"

# A prefix that did not exist: nothing of it is left, share/ included.
$MAKE --no-print-directory -s install DESTDIR="$tmp/fresh" PREFIX=/opt/atlas BUILD="$BUILD" \
    >/dev/null 2>&1 || fail "make install into a new prefix failed"
$MAKE --no-print-directory -s uninstall DESTDIR="$tmp/fresh" PREFIX=/opt/atlas BUILD="$BUILD" \
    >/dev/null 2>&1 || fail "make uninstall of a new prefix failed"
[ ! -e "$tmp/fresh" ] || fail "make uninstall of a new prefix left: $(find "$tmp/fresh" | tr '\n' ' ')"
echo "front-install: PASS: make uninstall of a prefix install created leaves nothing of it"
