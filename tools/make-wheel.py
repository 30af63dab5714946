#!/usr/bin/env python3
"""make-wheel.py BUILD VERSION: a Python wheel of atlastrace, for `pip install` (make wheel).

PyTorch, JAX and Triton users live in virtual environments: `pip install atlastrace-*.whl`
gives them `atlas-trace` (and `atlas-diff`) on PATH. The wheel holds the library and both
tools, built by make for this machine (so the platform tag is this machine's), under the
package `atlastrace`:

    atlastrace/bin/atlas-trace, atlastrace/bin/atlas-diff, atlastrace/lib/libatlastrace.so

atlas-trace finds the library as ../lib/libatlastrace.so from its own file, as in an installed
prefix. The console entry points exec the tools with the user's argv[0], so exit statuses and
signals are the tools' own and re-run hints name the command the user typed.

A wheel is a zip with a .dist-info folder (METADATA, WHEEL, entry_points.txt, RECORD): written
here with zipfile, with no network and no build backend.
"""
import base64
import hashlib
import os
import platform
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


def digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + h.decode()


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: make-wheel.py BUILD VERSION\n")
        return 2
    build, version = sys.argv[1], sys.argv[2]
    machine = platform.machine() or "x86_64"
    tag = "py3-none-linux_" + machine
    dist = "%s-%s.dist-info" % (NAME, version)
    out = os.path.join(build, "%s-%s-%s.whl" % (NAME, version, tag))

    files = []  # (name in the wheel, bytes, executable)
    for tool in ("atlas-trace", "atlas-diff"):
        with open(os.path.join(build, tool), "rb") as f:
            files.append(("%s/bin/%s" % (NAME, tool), f.read(), True))
    with open(os.path.join(build, "libatlastrace.so"), "rb") as f:
        files.append(("%s/lib/libatlastrace.so" % NAME, f.read(), True))
    files.append(("%s/__init__.py" % NAME, (INIT % version).encode(), False))
    files.append(("%s/_cli.py" % NAME, CLI.encode(), False))
    meta = [
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version,
        "Summary: LD_PRELOAD tracer of the CUDA driver API: step diffs, red zones, "
        "blocking copies, faults",
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
