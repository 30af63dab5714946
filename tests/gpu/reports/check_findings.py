#!/usr/bin/env python3
"""A findings file against the run's stderr (make reports-gpu-check, tests/gpu/reports/):

    check_findings.py REPORT STDERR [KIND=N ...] [--frame FILE:LINE] [--verdict N]

Each line validates against docs/findings.schema.json (tests/harness/validate_findings.py);
each line printed ("printed": true) is a line of STDERR ("]: " and its message); KIND=N: N
lines of that kind not suppressed; --frame: some finding's frames hold that file's base name
and line; --verdict N: the unsuppressed lines are N, as --error-exitcode's line says them.
Prints one line saying what it found; exit 0 when all hold."""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..", "..")


def main(argv):
    report, err = argv[1], argv[2]
    want, frame, verdict = {}, None, None
    rest = argv[3:]
    while rest:
        a = rest.pop(0)
        if a == "--frame":
            frame = rest.pop(0)
        elif a == "--verdict":
            verdict = int(rest.pop(0))
        else:
            k, n = a.split("=")
            want[k] = int(n)
    rc = subprocess.call([sys.executable, os.path.join(root, "tests/harness/validate_findings.py"),
                          os.path.join(root, "docs/findings.schema.json"), report])
    problems = [] if rc == 0 else ["does not validate"]
    text = open(err, encoding="utf-8", errors="replace").read()
    kinds, frames, unsuppressed = {}, [], 0
    for line in open(report, encoding="utf-8"):
        f = json.loads(line)
        if f["printed"] and ("]: " + f["message"] + "\n") not in text:
            problems.append("printed but not on stderr: " + f["message"][:120])
        if not f["suppressed"]:
            unsuppressed += 1
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        for fr in f["frames"] or []:
            if fr["file"] and fr["line"]:
                frames.append("%s:%d" % (os.path.basename(fr["file"]), fr["line"]))
    for k, n in want.items():
        if kinds.get(k, 0) != n:
            problems.append("%d %s, not %d" % (kinds.get(k, 0), k, n))
    if frame and frame not in frames:
        problems.append("no frame %s among %s" % (frame, sorted(set(frames))[:8]))
    if verdict is not None and unsuppressed != verdict:
        problems.append("%d unsuppressed lines, the verdict said %d" % (unsuppressed, verdict))
    print("check_findings: %s: %s; %s" % (report, kinds, "; ".join(problems) or "all hold"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
