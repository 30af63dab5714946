#!/bin/sh
# The packages, installed the way their users install them, where nothing else of atlastrace
# is, then the demo run from there on the fake driver (make package-check):
#   - the .deb (make deb) unpacked by dpkg-deb into an empty root: its atlas-trace preloads
#     its own library and traces the demo;
#   - the wheel (make wheel) pip-installed into a fresh venv, offline: the venv's atlas-trace
#     console command does the same, with the program's exit status.
# (make fresh-check installs the .deb with dpkg into its Debian root as well.)
#   sh tests/install/test_packages.sh BUILD VERSION
set -u
version=${2:?usage: test_packages.sh BUILD VERSION}
NAME=packages
. "$(dirname "$0")/../harness/scripted.sh"
unset ATLAS_LIB
demo="$build/examples/demo_steps $build/tests/front_demo_kernels.so"

# demo TOOL WHAT: the demo through TOOL, traced, its overrun found, its answers right
demo() {
    # shellcheck disable=SC2086 # demo is the program and its argument
    (cd "$tmp" && "$1" --trace --redzone=256 --redzone-check=launch $demo) >"$tmp/out" 2>&1
    if grep -q '^demo: ok$' "$tmp/out" && grep -q 'step .* differs from' "$tmp/out" &&
        grep -q 'redzone overrun: ' "$tmp/out"; then
        ok "$2: the demo runs traced (step diffs, the overrun found)"
    else bad "$2: the demo did not run traced"; fi
}

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
