#!/bin/sh
# Tests the install path that make check takes on a fresh machine, with
# stand-ins for apt-get, sudo, id and pkg-config first on PATH: Check is
# "missing" until the stand-in apt-get has "installed" it. A machine that
# already has the tools cannot show a broken install step; this can. (The
# real path, with Debian's apt-get in a throwaway root where the tools really
# are missing: make fresh-check.) Also: bare make's goal, and that the goals
# a GPU machine without a package registry runs never install anything.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
script="$root/tools/ensure-deb.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atlas-ensure-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "PASS: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; [ -f "$tmp/out" ] && sed 's/^/    /' "$tmp/out"; }

# One stand-in folder per case. $tmp/case/state holds what was installed
# and the log of calls (one line each, with DEBIAN_FRONTEND as seen).
setup() { # setup UID APT_MODE [nosudo]
    d=$tmp/case
    rm -rf "$d"
    mkdir -p "$d/bin" "$d/state"
    cat >"$d/bin/id" <<EOS
#!/bin/sh
[ "\$1" = -u ] && { echo $1; exit 0; }
exec /usr/bin/id "\$@"
EOS
    # APT_MODE: ok (installs), nolists (install fails until update ran), broken
    cat >"$d/bin/apt-get" <<EOS
#!/bin/sh
echo "apt-get \$* FRONTEND=\${DEBIAN_FRONTEND:-unset} UID=\$(id -u) SUDO=\${ATL_STUB_SUDO:-no}" >>"$d/state/log"
case "$2" in broken) exit 100 ;; esac
case "\$*" in
  *update*) touch "$d/state/lists"; exit 0 ;;
  *install*)
    if [ "$2" = nolists ] && [ ! -f "$d/state/lists" ]; then echo "E: Unable to locate package" >&2; exit 100; fi
    for p in "\$@"; do case "\$p" in -*|install) ;; *) touch "$d/state/pkg-\$p" ;; esac; done
    exit 0 ;;
esac
exit 0
EOS
    cat >"$d/bin/pkg-config" <<EOS
#!/bin/sh
[ "\$1" = --exists ] && [ -f "$d/state/pkg-\$2" ] && exit 0
[ "\$1" = --exists ] && exit 1
exit 0
EOS
    if [ "${3:-}" != nosudo ]; then
        cat >"$d/bin/sudo" <<EOS
#!/bin/sh
echo "sudo \$*" >>"$d/state/log"
ATL_STUB_SUDO=yes; export ATL_STUB_SUDO
exec "\$@"
EOS
    fi
    chmod +x "$d/bin"/*
    # Every other command the script and make use, and nothing named sudo
    # when the case has none: a PATH of the stand-ins plus copies of the
    # system folders would still find /usr/bin/sudo, so link what is needed.
    mkdir -p "$d/sys"
    for c in sh env cat rm touch sed grep make cc gcc mkdir dirname nproc realpath; do
        p=$(command -v "$c" 2>/dev/null) && ln -sf "$p" "$d/sys/$c"
    done
    PATHX="$d/bin:$d/sys"
}

run() { # run DESCRIPTION EXPECTED_RC command...
    desc=$1 want=$2
    shift 2
    PATH=$PATHX "$@" >"$tmp/out" 2>&1
    rc=$?
    [ "$rc" = "$want" ] || { bad "$desc: exit $rc, expected $want"; return 1; }
    return 0
}

# 1. root, Check missing: apt-get runs directly, DEBIAN_FRONTEND reaches it
setup 0 ok
if run "root install" 0 sh "$script" "make check" "pkg-config --exists check" check pkg-config; then
    if grep -q "^apt-get -o DPkg::Lock::Timeout=300 install -y -qq check pkg-config FRONTEND=noninteractive UID=0 SUDO=no" "$d/state/log" &&
       ! grep -q '^sudo' "$d/state/log" && grep -q "make check: installing check pkg-config" "$tmp/out"; then
        ok "root: apt-get install with DEBIAN_FRONTEND=noninteractive, no sudo"
    else bad "root: calls were $(cat "$d/state/log")"; fi
fi

# 2. not root, sudo present: apt-get runs through sudo
setup 1000 ok
if run "sudo install" 0 sh "$script" "make check" "pkg-config --exists check" check; then
    if grep -q "^sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install" "$d/state/log" &&
       grep -q "^apt-get -o DPkg::Lock::Timeout=300 install -y -qq check FRONTEND=noninteractive UID=1000 SUDO=yes" "$d/state/log"; then
        ok "non-root: apt-get through sudo"
    else bad "non-root: calls were $(cat "$d/state/log")"; fi
fi

# 3. not root, no sudo: one clear line, exit 1, apt-get never called
setup 1000 ok nosudo
if run "no sudo" 1 sh "$script" "make check" "pkg-config --exists check" check; then
    if grep -q "make check: cannot install check: not root and no sudo" "$tmp/out" && [ ! -f "$d/state/log" ]; then
        ok "non-root without sudo: refused with one line"
    else bad "non-root without sudo: output or calls wrong"; fi
fi

# 4. fresh machine without package lists: install fails, update, install again
setup 0 nolists
if run "no lists" 0 sh "$script" "make check" "pkg-config --exists check" check; then
    if [ "$(grep -c install "$d/state/log")" = 2 ] && grep -q "^apt-get -o DPkg::Lock::Timeout=300 update" "$d/state/log"; then
        ok "no package lists: apt-get update, then install"
    else bad "no package lists: calls were $(cat "$d/state/log")"; fi
fi

# 5. already installed: nothing is run
setup 0 ok
touch "$d/state/pkg-check"
if run "present" 0 sh "$script" "make check" "pkg-config --exists check" check; then
    if [ ! -f "$d/state/log" ] && [ ! -s "$tmp/out" ]; then ok "present: no apt-get, no output"
    else bad "present: apt-get was called or something printed"; fi
fi

# 6. apt-get broken: exit 1 and a line naming the package
setup 0 broken
if run "broken apt" 1 sh "$script" "make check" "pkg-config --exists check" check; then
    if grep -q "make check: apt-get install check failed" "$tmp/out"; then ok "broken apt-get: exit 1, package named"
    else bad "broken apt-get: no clear line"; fi
fi

# 7. make check's install step on a fresh root machine (tools/test-tools.sh): Check,
#    valgrind and clang in one apt-get, then clang's libFuzzer runtime; never two apt-gets at
#    once (the second would fail on dpkg's lock)
setup 0 ok
# pkgbin/PACKAGE/: the commands the package puts on PATH
mkdir -p "$d/pkgbin/valgrind" "$d/pkgbin/clang" "$d/pkgbin/python3-venv"
printf '#!/bin/sh\nexit 0\n' >"$d/pkgbin/valgrind/valgrind"
printf '#!/bin/sh\nexit 0\n' >"$d/pkgbin/python3-venv/python3"
cat >"$d/pkgbin/clang/clang" <<EOS
#!/bin/sh
case "\$*" in
  -dumpversion) echo 14.0.6 ;;
  *-fsanitize=fuzzer*) [ -f "$d/state/pkg-libclang-rt-14-dev" ] ;;
esac
EOS
chmod +x "$d/pkgbin"/*/*
# the stand-in apt-get puts a package's command on PATH, and says when it starts and ends
mv "$d/bin/apt-get" "$d/bin/apt-get.real"
cat >"$d/bin/apt-get" <<EOS
#!/bin/sh
echo "begin \$*" >>"$d/state/order"
[ -f "$d/state/busy" ] && echo "overlap" >>"$d/state/order"
touch "$d/state/busy"
"$d/bin/apt-get.real" "\$@"; rc=\$?
for p in "\$@"; do [ -d "$d/pkgbin/\$p" ] && cp "$d/pkgbin/\$p"/* "$d/bin/"; done
rm -f "$d/state/busy"
echo "end" >>"$d/state/order"
exit \$rc
EOS
chmod +x "$d/bin/apt-get"
ln -sf "$(command -v mktemp)" "$d/sys/mktemp"
ln -sf "$(command -v cut)" "$d/sys/cut"
ln -sf "$(command -v cp)" "$d/sys/cp"
if run "test-tools" 0 sh "$root/tools/test-tools.sh" clang; then
    if [ "$(grep -c '^begin' "$d/state/order")" = 2 ] && ! grep -q overlap "$d/state/order" &&
       grep -q '^begin -o DPkg::Lock::Timeout=300 install -y -qq check pkg-config valgrind clang python3-venv$' "$d/state/order" &&
       grep -q '^begin -o DPkg::Lock::Timeout=300 install -y -qq libclang-rt-14-dev$' "$d/state/order"; then
        ok "make check's install step: check, pkg-config, valgrind, clang, python3-venv in one apt-get, then libclang-rt-14-dev, one at a time"
    else bad "make check's install step: apt-get calls were $(tr '\n' ';' <"$d/state/order")"; fi
fi
# run again: everything is there, nothing is installed
rm -f "$d/state/order"
if run "test-tools, all present" 0 sh "$root/tools/test-tools.sh" clang; then
    if [ ! -f "$d/state/order" ]; then ok "make check's install step: nothing to install, no apt-get"
    else bad "make check's install step ran apt-get with everything present"; fi
fi

# 8. the suites only ask: on a machine without Check, a suite run alone stops with one line
#    and installs nothing
setup 0 ok
if run "make check-deps" 2 make -s -C "$root" check-deps BUILD="$tmp/build"; then
    if [ ! -f "$d/state/log" ] && grep -q "make check installs it" "$tmp/out"; then
        ok "make check-deps on a machine without Check: one line, no apt-get"
    else bad "make check-deps: apt-get ran, or no clear line"; fi
fi

# 9. bare make builds the library and both tools (the default goal), and make, demo, install,
#    gpu-check and bench neither install nor name a test tool's install (a GPU cluster has no
#    package registry): their recipes, as make -n prints them
setup 0 ok
for goal in "" demo install gpu-check bench; do
    if run "make -n $goal" 0 make -n -C "$root" BUILD="$tmp/b" $goal; then
        if grep -E "apt-get|tools/ensure-deb|tools/test-tools|pip install|check-deps" "$tmp/out" >"$tmp/hits" || [ -f "$d/state/log" ]; then
            cat "$d/state/log" "$tmp/hits" >"$tmp/out" 2>/dev/null
            bad "make ${goal:-(no goal)} would install or ask for a test tool"
        elif [ -z "$goal" ] && ! { grep -q -- "-o $tmp/b/libatlastrace.so" "$tmp/out" &&
             grep -q -- "-o $tmp/b/atlas-trace" "$tmp/out" && grep -q -- "-o $tmp/b/atlas-diff" "$tmp/out"; }; then
            bad "bare make does not build the library and both tools"
        else
            what=${goal:+"make $goal: no test tool, no package install"}
            ok "${what:-make (no goal): no test tool, no package install; builds the library, atlas-trace and atlas-diff}"
        fi
    fi
done

echo "install: $pass passed, $fail failed"
[ "$fail" = 0 ]
