#!/bin/sh
# make-deb.sh MAKE BUILD VERSION: a Debian package of atlastrace (make deb), with dpkg-deb.
#
# What make install puts in /usr (the library, libatlaslaunch, the headers and pkg-config file,
# atlas-trace, atlas-diff and their man pages), staged with DESTDIR, as the package atlastrace
# for this machine's architecture: BUILD/atlastrace_VERSION_ARCH.deb. The list of folders make
# install created (for make uninstall) is left out: dpkg keeps its own.
set -eu
make_cmd=$1
build=$2
version=$3
arch=$(dpkg --print-architecture)
stage=$build/deb/atlastrace
out=$build/atlastrace_${version}_$arch.deb

rm -rf "$build/deb"
mkdir -p "$stage"
stage=$(cd "$stage" && pwd)
$make_cmd --no-print-directory -s install DESTDIR="$stage" PREFIX=/usr BUILD="$build" >/dev/null
rm -rf "$stage/usr/share/atlastrace"
mkdir -p "$stage/DEBIAN" "$stage/usr/share/doc/atlastrace"
cp README.md "$stage/usr/share/doc/atlastrace/README.md"
size=$(du -sk "$stage/usr" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOC
Package: atlastrace
Version: $version
Architecture: $arch
Maintainer: atlastrace developers <atlastrace@localhost>
Installed-Size: $size
Depends: libc6
Section: devel
Priority: optional
Description: LD_PRELOAD tracer of the CUDA driver API
 atlas-trace runs an unmodified CUDA program (C on the driver API, nvcc
 programs, PyTorch, JAX, CuPy, Triton) with libatlastrace.so preloaded: step
 diffs of the host values a CUDA graph would freeze, red zones after every
 allocation, blocking device-to-host copies, the launch that faulted, and a
 ledger of allocations and kernels. atlas-diff compares recorded step traces;
 libatlaslaunch is a typed, checked kernel-launch builder.
EOC
dpkg-deb --root-owner-group --build "$stage" "$out" >/dev/null
echo "$out"
