#!/bin/sh
# make-deb.sh MAKE BUILD VERSION: a Debian package of atlastrace (make deb), with dpkg-deb.
#
# What make install puts in /usr (the library, libatlaslaunch, the headers and pkg-config file,
# atlas-trace, atlas-diff and their man pages, the licence, the README and docs/ in
# /usr/share/doc/atlastrace), staged with DESTDIR, as the package atlastrace for this machine's
# architecture: BUILD/atlastrace_VERSION_ARCH.deb. The list of folders make install created
# (for make uninstall) is left out: dpkg keeps its own. Debian wants the licence as
# /usr/share/doc/atlastrace/copyright: written here from LICENSE, in Debian's machine-readable
# format (the MIT licence is Debian's "Expat").
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
mkdir -p "$stage/DEBIAN"
{
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: atlastrace"
    echo
    echo "Files: *"
    sed -n 's/^Copyright (c) /Copyright: /p' LICENSE
    echo "License: Expat"
    # the licence's text from its first paragraph on, indented; a blank line is " ."
    sed -n '/^Permission/,$p' LICENSE | sed 's/^$/./; s/^/ /'
} >"$stage/usr/share/doc/atlastrace/copyright"
chmod 644 "$stage/usr/share/doc/atlastrace/copyright"
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
