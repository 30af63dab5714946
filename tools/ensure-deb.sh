#!/bin/sh
# ensure-deb.sh WHO PROBE PACKAGE...
#
# Installs Debian PACKAGEs when the shell command PROBE fails, then runs
# PROBE again. WHO names the caller in messages ("make check", "fuzz").
# As root apt-get is run directly; otherwise through sudo when there is one.
# DEBIAN_FRONTEND reaches apt-get through env(1), so no prompt can block.
# The package lists are refreshed only when the first install attempt fails
# (a fresh machine often has none). Exit 0 when PROBE passes in the end,
# else 1 with one line saying what to install by hand.
#
# make check calls this, through tools/test-tools.sh, for every test tool
# (Check, valgrind, clang, libFuzzer's runtime) before any suite runs;
# tests/install/test_ensure_deb.sh runs it against stand-in apt-get, sudo
# and id commands.
set -u

if [ $# -lt 3 ]; then
    echo "usage: ensure-deb.sh WHO PROBE PACKAGE..." >&2
    exit 2
fi
who=$1
probe=$2
shift 2

if sh -c "$probe" >/dev/null 2>&1; then
    exit 0
fi

echo "$who: installing $* (Debian packages)"

if [ "$(id -u)" = 0 ]; then
    run=
elif command -v sudo >/dev/null 2>&1; then
    run=sudo
else
    echo "$who: cannot install $*: not root and no sudo; install the Debian package(s) $* by hand" >&2
    exit 1
fi

# Lock::Timeout: another apt (a fresh machine's unattended upgrades) holding dpkg's lock is
# waited for, not failed on.
apt() {
    $run env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@"
}
apt_install() {
    apt install -y -qq "$@" >/dev/null
}

if ! command -v apt-get >/dev/null 2>&1; then
    echo "$who: cannot install $*: no apt-get on this machine; install the package(s) $* by hand" >&2
    exit 1
fi

if ! apt_install "$@" 2>/dev/null; then
    apt update -qq >/dev/null ||
        echo "$who: apt-get update failed; trying the install anyway" >&2
    if ! apt_install "$@"; then
        echo "$who: apt-get install $* failed; install the package(s) by hand" >&2
        exit 1
    fi
fi

if ! sh -c "$probe" >/dev/null 2>&1; then
    echo "$who: installed $*, but '$probe' still fails" >&2
    exit 1
fi
exit 0
