#!/bin/sh
# The packages, installed the way their users install them, where nothing else of atlastrace
# is, then the demo run from there on the fake driver (make package-check):
#   - the .deb (make deb) unpacked by dpkg-deb into an empty root: its atlas-trace preloads
#     its own library and traces the demo; the licence is its copyright file, and the README
#     and docs/ are in /usr/share/doc/atlastrace;
#   - the wheel (make wheel) pip-installed into a fresh venv, offline: the venv's atlas-trace
#     console command does the same, with the program's exit status; its tag is manylinux for
#     the glibc the binaries need, its metadata says License: MIT with the licence in its
#     .dist-info, and the README and docs/ are in the package.
# (make fresh-check installs the .deb with dpkg into its Debian root as well.)
#   sh tests/install/test_packages.sh BUILD VERSION
set -u
version=${2:?usage: test_packages.sh BUILD VERSION}
NAME=packages
. "$(dirname "$0")/../harness/scripted.sh"
unset ATLAS_LIB
root=$(cd "$(dirname "$0")/../.." && pwd)
demo="$build/examples/demo_steps $build/tests/front_demo_kernels.so"
# the documents every package carries, as paths in the tree
docs="README.md $(cd "$root" && echo docs/*.md) docs/findings.schema.json"

# same_docs DIR WHAT: DIR holds the README and docs/ as they are in the tree
same_docs() {
    miss=""
    for f in $docs; do cmp -s "$root/$f" "$1/$f" || miss="$miss $f"; done
    if [ -z "$miss" ]; then ok "$2: the README and docs/ ($(echo $docs | wc -w) files)"
    else echo "not there, or not as in the tree:$miss" >"$tmp/out"; bad "$2: the README and docs/"; fi
}

# demo TOOL WHAT: the demo through TOOL, traced, its overrun found, its answers right
demo() {
    # shellcheck disable=SC2086 # demo is the program and its argument
    (cd "$tmp" && "$1" --trace --redzone=256 --redzone-check=launch $demo) >"$tmp/out" 2>&1
    if grep -q '^demo: ok$' "$tmp/out" && grep -q 'step .* differs from' "$tmp/out" &&
        grep -q 'redzone overrun: ' "$tmp/out"; then
        ok "$2: the demo runs traced (step diffs, the overrun found)"
    else bad "$2: the demo did not run traced"; fi
}

# the licence's text from its first paragraph on, as Debian's copyright file carries it
sed -n '/^Permission/,$p' "$root/LICENSE" >"$tmp/license"

# ---- the Debian package ----------------------------------------------------------------------
deb=$(ls "$build"/atlastrace_"$version"_*.deb 2>/dev/null | head -n 1)
if ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "packages: dpkg-deb not found: the .deb not checked"
elif [ -z "$deb" ]; then
    : >"$tmp/out"; bad "no $build/atlastrace_${version}_*.deb (make deb)"
else
    dpkg-deb -I "$deb" >"$tmp/out" 2>&1
    if grep -q '^ Package: atlastrace$' "$tmp/out" && grep -q "^ Version: $version\$" "$tmp/out"; then
        ok ".deb: package atlastrace $version"
    else bad ".deb: control file"; fi
    dpkg-deb -c "$deb" >"$tmp/out" 2>&1
    miss=""
    for f in usr/bin/atlas-trace usr/bin/atlas-diff usr/lib/libatlastrace.so usr/lib/libatlaslaunch.so \
             usr/include/atlas/launch.h usr/share/man/man1/atlas-trace.1; do
        grep -q " \./$f\$" "$tmp/out" || miss="$miss $f"
    done
    if [ -z "$miss" ] && ! grep -q 'share/atlastrace' "$tmp/out"; then
        ok ".deb: the library, both tools, libatlaslaunch, headers, man pages; not make uninstall's list"
    else bad ".deb: missing$miss, or make uninstall's list shipped"; fi
    dpkg-deb -x "$deb" "$tmp/root"
    # Debian's copyright file: the licence's holder and its whole text, in the format's indent
    cr=$tmp/root/usr/share/doc/atlastrace/copyright
    if [ -f "$cr" ] && grep -qx 'Copyright: 2026 the atlastrace authors' "$cr" &&
        grep -qx 'License: Expat' "$cr" &&
        sed -n '/^License: /,$p' "$cr" | sed '1d; s/^ //; s/^\.$//' | cmp -s - "$tmp/license"; then
        ok ".deb: /usr/share/doc/atlastrace/copyright holds the MIT licence"
    else
        cp "$cr" "$tmp/out" 2>/dev/null || echo "no $cr" >"$tmp/out"
        bad ".deb: the copyright file"
    fi
    cmp -s "$root/LICENSE" "$tmp/root/usr/share/doc/atlastrace/LICENSE" &&
        ok ".deb: LICENSE in /usr/share/doc/atlastrace" || bad ".deb: no LICENSE in /usr/share/doc/atlastrace"
    same_docs "$tmp/root/usr/share/doc/atlastrace" ".deb"
    "$tmp/root/usr/bin/atlas-trace" "$build/tests/front_env" env >"$tmp/out" 2>&1
    if grep -qx "LD_PRELOAD=$tmp/root/usr/lib/libatlastrace.so" "$tmp/out"; then
        ok ".deb: its atlas-trace preloads its own library"
    else bad ".deb: its atlas-trace preloads another library"; fi
    demo "$tmp/root/usr/bin/atlas-trace" ".deb"
fi

# ---- the wheel, in a fresh venv ---------------------------------------------------------------
whl=$(ls "$build"/atlastrace-"$version"-*.whl 2>/dev/null | head -n 1)
if [ -z "$whl" ]; then
    : >"$tmp/out"; bad "no $build/atlastrace-$version-*.whl (make wheel)"
elif ! python3 -m venv "$tmp/venv" >"$tmp/out" 2>&1; then
    bad "python3 -m venv failed (make check installs python3-venv)"
else
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/venv/bin/python" -m pip install -q --no-index --no-deps \
        "$whl" >"$tmp/out" 2>&1 || bad "pip install of the wheel failed"
    if [ -x "$tmp/venv/bin/atlas-trace" ] && [ -x "$tmp/venv/bin/atlas-diff" ]; then
        ok "wheel: pip install (offline, in a fresh venv) gives atlas-trace and atlas-diff"
    else bad "wheel: no atlas-trace or atlas-diff in the venv's bin"; fi
    # the tag: manylinux_2_N for the highest GLIBC_2.N the binaries need (docs/building.md)
    need=$(for f in atlas-trace atlas-diff libatlastrace.so; do objdump -T "$build/$f"; done |
        sed -n 's/.*GLIBC_2\.\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
    case $whl in
    *-py3-none-manylinux_2_${need}_$(uname -m).whl) ok "wheel: tagged manylinux_2_${need}, the glibc its binaries need" ;;
    *) echo "$whl; the binaries need GLIBC_2.$need" >"$tmp/out"; bad "wheel: its platform tag" ;;
    esac
    # the metadata and the licence, as the venv's importlib.metadata reads them
    "$tmp/venv/bin/python" -c 'import importlib.metadata as m, sys
d = m.distribution("atlastrace")
print("License: %s" % d.metadata["License"])
print("License-File: %s" % d.metadata["License-File"])
sys.stdout.write(d.read_text("LICENSE") or "")' >"$tmp/meta" 2>&1
    if grep -qx 'License: MIT' "$tmp/meta" && grep -qx 'License-File: LICENSE' "$tmp/meta" &&
        sed '1,2d' "$tmp/meta" | cmp -s - "$root/LICENSE"; then
        ok "wheel: License: MIT, and LICENSE in its .dist-info"
    else cp "$tmp/meta" "$tmp/out"; bad "wheel: the License field or the licence file"; fi
    pkg=$("$tmp/venv/bin/python" -c 'import atlastrace, os; print(os.path.dirname(atlastrace.__file__))')
    same_docs "$pkg" "wheel"
    lib=$("$tmp/venv/bin/python" -c 'import atlastrace._cli as c; print(c.library())')
    "$tmp/venv/bin/atlas-trace" "$build/tests/front_env" env >"$tmp/out" 2>&1
    case $lib in
    "$tmp/venv/"*) grep -qx "LD_PRELOAD=$lib" "$tmp/out" && ok "wheel: atlas-trace preloads the venv's library" ||
        bad "wheel: atlas-trace does not preload the venv's library ($lib)" ;;
    *) bad "wheel: the library is outside the venv: $lib" ;;
    esac
    "$tmp/venv/bin/atlas-trace" "$build/tests/front_env" exit 7 >"$tmp/out" 2>&1
    st=$?
    [ "$st" = 7 ] && ok "wheel: the program's exit status comes through the console command" ||
        bad "wheel: exit status $st, not 7"
    demo "$tmp/venv/bin/atlas-trace" "wheel"
    # a hint from a run through the console command re-runs through it, pasted as printed
    (cd "$tmp" && "$tmp/venv/bin/atlas-trace" "$build/tests/sync_target" suspects) >"$tmp/out" 2>&1
    cmd=$(sed -n 's/^atlas\[[0-9]*\]: fault: re-run with debug sync[^)]*): //p' "$tmp/out")
    case $cmd in
    "$tmp/venv/bin/atlas-trace --debug-sync=oob_write $build/tests/sync_target suspects")
        (cd "$tmp" && sh -c "$cmd") >"$tmp/out" 2>&1
        grep -q 'debug-sync: launch failed: kernel=oob_write' "$tmp/out" &&
            ok "wheel: the fault's re-run hint names the venv's atlas-trace and, pasted, the launch" ||
            bad "wheel: the pasted hint '$cmd' did not name the launch" ;;
    *) bad "wheel: the re-run hint is '$cmd'" ;;
    esac
    "$tmp/venv/bin/atlas-diff" --version >"$tmp/out" 2>&1
    grep -q "atlas-diff (atlastrace) $version" "$tmp/out" && ok "wheel: atlas-diff runs" ||
        bad "wheel: atlas-diff --version"
fi

finish
