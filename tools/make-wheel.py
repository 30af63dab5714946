#!/usr/bin/env python3
"""make-wheel.py BUILD VERSION: a Python wheel of atlastrace, for `pip install` (make wheel).

PyTorch, JAX and Triton users live in virtual environments: `pip install atlastrace-*.whl`
gives them `atlas-trace` (and `atlas-diff`) on PATH. The wheel holds the library and both
tools, built by make for this machine, under the package `atlastrace`, with the README and the
documents the reports point to:

    atlastrace/bin/atlas-trace, atlastrace/bin/atlas-diff, atlastrace/lib/libatlastrace.so
    atlastrace/README.md, atlastrace/docs/*.md, atlastrace/docs/findings.schema.json

and the licence, LICENSE, in its .dist-info (License: MIT, License-File: LICENSE).

The platform tag is manylinux_2_N_ARCH, N the highest glibc symbol version the three binaries
need (objdump -T: GLIBC_2.34 where glibc is 2.34 or later, which moved dlopen and the pthread
functions into libc.so.6 under that version): pip installs the wheel on any Linux whose glibc
is 2.N or later, and refuses it where the binaries would not load. Their other needs, the
loader, libc.so.6 and libgcc_s.so.1, are on every manylinux system.

atlas-trace finds the library as ../lib/libatlastrace.so from its own file, as in an installed
prefix. The console entry points exec the tools with the user's argv[0], so exit statuses and
signals are the tools' own and re-run hints name the command the user typed.

A wheel is a zip with a .dist-info folder (METADATA, WHEEL, entry_points.txt, RECORD): written
here with zipfile, with no network and no build backend.
"""
import base64
import glob
import hashlib
import os
import platform
import re
import subprocess
import sys
import zipfile

NAME = "atlastrace"

CLI = '''"""The atlas-trace and atlas-diff commands of the atlastrace wheel: each execs its tool."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _exec(tool):
    path = os.path.join(HERE, "bin", tool)
    try:
        os.execv(path, [sys.argv[0]] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("%s: cannot run %s: %s\\n" % (tool, path, e.strerror))
        return 126


def atlas_trace():
    return _exec("atlas-trace")


def atlas_diff():
    return _exec("atlas-diff")


def library():
    """The absolute path of libatlastrace.so, for LD_PRELOAD."""
    return os.path.join(HERE, "lib", "libatlastrace.so")
'''

INIT = '''"""atlastrace: a CUDA driver API tracer loaded with LD_PRELOAD (the atlas-trace command)."""
__version__ = "%s"
'''


def glibc_floor(paths):
    """The highest GLIBC_2.N symbol version the ELF files at paths need, as N (objdump -T)."""
    floor = 0
    for path in paths:
        out = subprocess.run(["objdump", "-T", path], check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        for minor in re.findall(r"\bGLIBC_2\.(\d+)", out):
            floor = max(floor, int(minor))
    return floor


def digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + h.decode()


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: make-wheel.py BUILD VERSION\n")
        return 2
    build, version = sys.argv[1], sys.argv[2]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    machine = platform.machine() or "x86_64"
    binaries = [os.path.join(build, n) for n in ("atlas-trace", "atlas-diff", "libatlastrace.so")]
    floor = glibc_floor(binaries)
    if floor == 0:
        sys.stderr.write("make-wheel.py: no GLIBC_2.N symbol version in %s\n" % " ".join(binaries))
        return 1
    tag = "py3-none-manylinux_2_%d_%s" % (floor, machine)
    dist = "%s-%s.dist-info" % (NAME, version)
    out = os.path.join(build, "%s-%s-%s.whl" % (NAME, version, tag))

    files = []  # (name in the wheel, bytes, executable)
    for path in binaries:
        tool = os.path.basename(path)
        with open(path, "rb") as f:
            where = "lib" if tool.endswith(".so") else "bin"
            files.append(("%s/%s/%s" % (NAME, where, tool), f.read(), True))
    files.append(("%s/__init__.py" % NAME, (INIT % version).encode(), False))
    files.append(("%s/_cli.py" % NAME, CLI.encode(), False))
    # the documents, where the README's links to docs/ hold
    docs = ["README.md"] + sorted(os.path.relpath(p, root) for p in
                                  glob.glob(os.path.join(root, "docs", "*.md")))
    docs.append(os.path.join("docs", "findings.schema.json"))
    for name in docs:
        with open(os.path.join(root, name), "rb") as f:
            files.append(("%s/%s" % (NAME, name), f.read(), False))
    with open(os.path.join(root, "LICENSE"), "rb") as f:
        files.append((dist + "/LICENSE", f.read(), False))
    meta = [
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version,
        "Summary: LD_PRELOAD tracer of the CUDA driver API: step diffs, red zones, "
        "blocking copies, faults",
        "License: MIT",
        "License-File: LICENSE",
        "Classifier: License :: OSI Approved :: MIT License",
        "Classifier: Operating System :: POSIX :: Linux",
        "Requires-Python: >=3.6",
        "Platform: linux",
        "",
        "atlas-trace runs a CUDA program (PyTorch, JAX, Triton, CuPy, nvcc programs) with "
        "libatlastrace.so preloaded; see its --help.",
        "",
    ]
    files.append((dist + "/METADATA", "\n".join(meta).encode(), False))
    wheel = ["Wheel-Version: 1.0", "Generator: atlastrace tools/make-wheel.py",
             "Root-Is-Purelib: false", "Tag: " + tag, ""]
    files.append((dist + "/WHEEL", "\n".join(wheel).encode(), False))
    entry = ["[console_scripts]", "atlas-trace = atlastrace._cli:atlas_trace",
             "atlas-diff = atlastrace._cli:atlas_diff", ""]
    files.append((dist + "/entry_points.txt", "\n".join(entry).encode(), False))
    files.append((dist + "/top_level.txt", (NAME + "\n").encode(), False))

    record = ["%s,%s,%d" % (n, digest(d), len(d)) for n, d, _ in files]
    record.append(dist + "/RECORD,,")
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode(), False))

    # a wheel of this version built earlier under another tag (another glibc) would be installed
    # in place of this one by `pip install BUILD/atlastrace-*.whl`
    for old in glob.glob(os.path.join(build, "%s-%s-*.whl" % (NAME, version))):
        if old != out:
            os.remove(old)
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d, exe in files:
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # the mode pip gives the file when it installs it
            info.external_attr = (0o100755 if exe else 0o100644) << 16
            z.writestr(info, d)
    os.replace(tmp, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
