#!/bin/sh
# make fresh-check: the README's two commands on a fresh machine, for real.
#
#   sh tests/install/fresh_check.sh CUDA_INCLUDE_DIR WORK_DIR
#
# A throwaway Debian bookworm root (debootstrap --variant=minbase), entered with chroot, where
# Check, valgrind and clang really are missing and apt-get is Debian's own. It gets what
# README.md says a user needs (a C compiler, make, libc6-dev for libdl and pthreads, git, and
# the CUDA toolkit's headers, copied in: they are no Debian package), then in a clean clone of
# this repository's HEAD, made by the root's git:
#   make          the default goal builds the library and both tools, and installs nothing
#   make demo     installs nothing either
#   make check    installs the test tools itself, and its first run must pass
#   make deb      the package installs with dpkg (its licence and docs with it), runs the
#                 demo, and is removed
# Each step's time is printed; the logs stay in WORK_DIR/logs (the downloaded packages in
# WORK_DIR/cache, for the next run); the root, under /tmp, is removed.
#
# Needs root (debootstrap, chroot, mount) and a Debian mirror (FRESH_MIRROR, default
# deb.debian.org).
#
# Safety, on a machine others use: the root is under /tmp, never under build/ (make clean's
# rm -rf must never meet a mount). Into it go a /proc, and a /dev of its own (a tmpfs holding
# binds of the few device files programs open: no directory of the host's /dev is reachable
# through it). On every exit the processes running in the root are stopped, every mount under
# it is taken down (deepest first, lazily if it must) and checked gone with findmnt, and only
# then is the root removed; if a mount is left, the root is left too, and said.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
cuda_inc=${1:?usage: fresh_check.sh CUDA_INCLUDE_DIR WORK_DIR}
work=${2:?usage: fresh_check.sh CUDA_INCLUDE_DIR WORK_DIR}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
logs=$work/logs
root=$(mktemp -d /tmp/atlas-fresh.XXXXXX) || exit 1
t_start=$(date +%s)

say() { echo "fresh-check: $*"; }
die() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and mount)"
[ -f "$cuda_inc/cuda.h" ] || die "no cuda.h in $cuda_inc (set CUDA_HOME)"
case $root in *[[:space:]]* | '' | /) die "refusing the root folder '$root'" ;; esac

# The mount points at or under $root, one a line (findmnt escapes blanks; $root has none).
mounts_under() {
    findmnt -rn -o TARGET | awk -v r="$root" \
        'substr($0, 1, length(r)) == r && (length($0) == length(r) || substr($0, length(r) + 1, 1) == "/")'
}

# Takes every mount under $root down, deepest first; 0 when none is left.
unmount_all() {
    for _ in 1 2 3; do
        [ -z "$(mounts_under)" ] && return 0
        mounts_under | sort -r | while IFS= read -r m; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done
    done
    [ -z "$(mounts_under)" ]
}

# Stops what still runs in the root (a make check cut short): by process id, those whose root
# directory is $root, all of them started by this script.
stop_inside() {
    for sig in TERM KILL; do
        pids=""
        for p in /proc/[0-9]*; do
            [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && pids="$pids ${p#/proc/}"
        done
        [ -z "$pids" ] && return 0
        # shellcheck disable=SC2086 # a list of process ids
        kill -s $sig $pids 2>/dev/null
        sleep 1
    done
}

# Removes $root, never while anything is mounted under it.
remove_root() {
    [ -e "$root" ] || return 0
    stop_inside
    if ! unmount_all; then
        say "still mounted under $root: $(mounts_under | tr '\n' ' '); the root is left in place"
        return 1
    fi
    rm -rf "$root"
}

trap 'rc=$?; remove_root || rc=1; exit $rc' EXIT
trap 'exit 130' INT TERM HUP

# in the root: a clean environment, root's home, the Debian PATH
inside() {
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c "$1"
}
timed() { # timed NAME LOG COMMAND: runs COMMAND inside, its output to LOG; sets $secs
    t0=$(date +%s)
    inside "$3" >"$logs/$2" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    say "$1: $secs s (exit $rc; log: $logs/$2)"
    return $rc
}
absent() { # the test tools are not installed in the root
    inside '! pkg-config --exists check 2>/dev/null && [ ! -e /usr/include/check.h ] &&
            ! command -v valgrind && ! command -v clang && ! dpkg -s check valgrind clang' \
        >/dev/null 2>&1
}

rm -rf "$logs"
mkdir -p "$logs" "$work/cache"

if ! command -v debootstrap >/dev/null 2>&1; then
    sh "$repo/tools/ensure-deb.sh" fresh-check "command -v debootstrap" debootstrap ||
        die "debootstrap is missing"
fi

t0=$(date +%s)
debootstrap --variant=minbase --cache-dir="$work/cache" bookworm "$root" "$mirror" \
    >"$logs/debootstrap.log" 2>&1 || { tail -n 20 "$logs/debootstrap.log"; die "debootstrap failed"; }
say "debootstrap --variant=minbase bookworm: $(($(date +%s) - t0)) s"

cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" || die "cannot mount /proc in the root"
mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev" || die "cannot mount the root's /dev"
for n in null zero full random urandom tty; do
    : >"$root/dev/$n" && mount --bind "/dev/$n" "$root/dev/$n" || die "cannot bind /dev/$n"
done
mkdir -p "$root/dev/shm" "$root/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm" || die "cannot mount /dev/shm"
for f in fd:/proc/self/fd stdin:/proc/self/fd/0 stdout:/proc/self/fd/1 stderr:/proc/self/fd/2; do
    ln -s "${f#*:}" "$root/dev/${f%%:*}"
done

absent || die "the fresh root already has Check, valgrind or clang"
say "the root has no Check, no valgrind, no clang"

# what README.md says a user needs: a C compiler, make, libc's headers, git; CUDA's headers
timed "apt-get install gcc make libc6-dev git" apt.log \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc make libc6-dev git' ||
    die "installing the compiler failed"
mkdir -p "$root/usr/local/cuda/include"
cp -a "$cuda_inc/." "$root/usr/local/cuda/include/" || die "copying the CUDA headers failed"

# a clean clone of this repository's HEAD, made by the root's git
head=$(git -C "$repo" rev-parse --short HEAD) || die "$repo is not a git checkout"
git clone -q --bare "$repo" "$root/tmp/atlastrace.git" || die "git clone failed"
inside 'git clone -q /tmp/atlastrace.git /root/atlastrace' >"$logs/clone.log" 2>&1 ||
    die "git clone inside the root failed"
say "clean clone of $head"

# bare make (README.md, Running it): the library and both tools, nothing installed; then the
# README's two commands in the same clone (make builds what make demo runs: one build, which
# the 2 cores' time budget wants)
timed "make (the default goal)" make.log 'cd /root/atlastrace && make' || die "make failed"
inside 'cd /root/atlastrace && test -f build/libatlastrace.so && test -x build/atlas-trace &&
        test -x build/atlas-diff' || die "make did not build the library and both tools"
absent || die "make installed a test tool"
say "make built the library, atlas-trace and atlas-diff, and installed nothing"

timed "make demo" demo.log 'cd /root/atlastrace && make demo' || die "make demo failed"
tail -n 3 "$logs/demo.log" | sed 's/^/    /'
absent || die "make demo installed a test tool"
say "make demo installed nothing"

timed "make check (the first run)" check.log 'cd /root/atlastrace && make check'
check_rc=$rc
verdict=$(grep '^make check: ' "$logs/check.log" | tail -n 1)
say "its verdict: ${verdict:-none}"
inside 'pkg-config --exists check && command -v valgrind && command -v clang' >/dev/null 2>&1 ||
    die "make check did not install Check, valgrind and clang"
case $verdict in
"make check: "*" suites, "*" checks, all passed in "*" s") [ "$check_rc" = 0 ] || die "make check exited $check_rc" ;;
*) grep -E ':[EF]:|FAIL' "$logs/check.log" | tail -n 20; die "the first make check did not pass" ;;
esac

# the Debian package, installed with dpkg; the demo through the installed atlas-trace, from
# outside the clone, then removed with dpkg
timed "make deb, dpkg -i" deb.log \
    'cd /root/atlastrace && make deb && dpkg -i build/atlastrace_*_*.deb' || die "the .deb did not install"
inside 'cd /tmp && [ "$(command -v atlas-trace)" = /usr/bin/atlas-trace ] &&
        atlas-trace /root/atlastrace/build/tests/front_env env' >"$logs/deb-env.log" 2>&1 &&
    grep -qx 'LD_PRELOAD=/usr/lib/libatlastrace.so' "$logs/deb-env.log" ||
    die "the installed atlas-trace does not preload the installed library (log: $logs/deb-env.log)"
inside 'cd /tmp && LD_LIBRARY_PATH=/root/atlastrace/build/fake atlas-trace --trace --redzone=256 \
        --redzone-check=launch /root/atlastrace/build/examples/demo_steps \
        /root/atlastrace/build/tests/front_demo_kernels.so' >"$logs/deb-demo.log" 2>&1
grep -q '^demo: ok$' "$logs/deb-demo.log" && grep -q 'redzone overrun: ' "$logs/deb-demo.log" &&
    grep -q 'step .* differs from' "$logs/deb-demo.log" ||
    die "the demo through the installed package did not run traced (log: $logs/deb-demo.log)"
# the licence as Debian's copyright file, and the licence, the README and docs/ as in the clone
inside 'd=/usr/share/doc/atlastrace && grep -qx "License: Expat" $d/copyright &&
        grep -q "^ Permission is hereby granted, free of charge" $d/copyright && cd /root/atlastrace &&
        for f in LICENSE README.md docs/*.md docs/findings.schema.json; do cmp -s $f $d/$f || exit 1; done' ||
    die "the installed package lacks its copyright file, LICENSE, the README or docs/ in /usr/share/doc/atlastrace"
inside 'dpkg -r atlastrace >/dev/null && [ ! -e /usr/lib/libatlastrace.so ] && [ ! -e /usr/bin/atlas-trace ] &&
        [ ! -e /usr/share/doc/atlastrace/copyright ]' ||
    die "dpkg -r atlastrace left files"
say "the .deb installed with dpkg with its licence and docs, ran the demo traced, and was removed"

say "PASS: in a fresh Debian root, make built, make demo ran, the first make check passed and the .deb installed and ran; $(($(date +%s) - t_start)) s in all"
