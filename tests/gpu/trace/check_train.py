"""Checks a traced training run (tests/gpu/trace/run_trace.sh):

    check_train.py LOG JSONL NAME SKIP
    check_train.py steady LOG JSONL MARKER

LOG: the live report; JSONL: the steps (ATLAS_TRACE_FILE); NAME: the name
of the training steps. A training step is a step named NAME that holds the
backward pass's marker kernel (bwd_marker, launched from autograd's thread).
From the (SKIP+1)-th training step on (the first ones are warm-up, or are
compared with warm-up), the report must say nothing about host values.
Prints "host=H marked=M": H report lines about host values (scalars, sizes,
grid/block/shmem, ops inserted or removed: every op line that names no
allocation; a folded run of such changes; a step of a new shape) in those
steps, and M the number of training steps.

The second form (tests/gpu/trace/run_programs.sh) finds the first step,
of any name, that launches a kernel whose name holds MARKER, and prints
"reports=R from=S": R report lines about the steps after it (step S), of
any kind (a step that differs, a folded run reaching it, a new shape, a
comparison with a capture): a steady state must have none.

marked_steps() reads both versions of the trace format (docs/trace.md, "JSON
lines"); tests/integration/test_check_train.py runs it on files the library writes
on the fake driver, so it is checked without a GPU."""
import json
import re
import sys


def marked_steps(lines, name, marker="bwd_marker"):
    """(name None: steps of any name)"""
    """The numbers of the steps named `name` that launch a kernel whose
    (mangled) name holds `marker`, in file order. Version 1 names the kernel
    and the step on every op line; version 2 declares each kernel once per
    step ({"s":N,"k":ID,"kernel":...}) and names the step on its end record."""
    marked = []
    with_marker = set()  # version 2: steps that declared a marker kernel
    for line in lines:
        if not line.strip():
            continue
        rec = json.loads(line)
        if "format" in rec:  # version 2's header
            continue
        if "s" in rec:  # version 2: a declaration or an op
            if marker in rec.get("kernel", ""):
                with_marker.add(rec["s"])
            continue
        if rec.get("end"):
            hit = rec["step"] in with_marker
        else:  # version 1: an op line
            hit = marker in rec.get("kernel", "")
        if hit and name in (None, rec["name"]) and (not marked or marked[-1] != rec["step"]):
            marked.append(rec["step"])
    return marked


# what a folded run says about a value (tracediff.c's fold line), and what
# says a step ran other ops
VALUE = re.compile(r" per step|alternates between|changes every step| inserted| removed")


def host_lines(lines, first):
    """The report lines about host values in steps numbered `first` on: op
    lines that name no allocation, in a report of such a step; folded runs
    (steps A-B) reaching such a step that name a value or ops inserted or
    removed; and steps of a new shape there."""
    found = []
    index = 0
    for line in lines:
        m = re.search(r"\(step (\d+)\) differs from #\d+", line)
        if m:
            index = int(m.group(1))
            continue
        fold = re.search(r"\]: steps? (\d+)(?:-(\d+))? \(", line)
        if fold:
            last = int(fold.group(2) or fold.group(1))
            if last >= first and VALUE.search(line.split("): ", 1)[-1]):
                found.append(line.rstrip())
            continue
        new = re.search(r"\(step (\d+)\): a new shape", line)
        if new:
            if int(new.group(1)) >= first:
                found.append(line.rstrip())
            continue
        if re.search(r":   ops? ", line) and "alloc#" not in line and index >= first:
            found.append(line.rstrip())
    return found


def reports_after(lines, first):
    """The report lines (headers and one-line reports) about steps after
    step `first`."""
    found = []
    for line in lines:
        m = re.search(r"\(step (\d+)\) (differs from|has the host values|has the shape of|: a new shape)",
                      line)
        fold = re.search(r"\]: steps? (\d+)(?:-(\d+))? [(:]", line)
        if m and int(m.group(1)) > first:
            found.append(line.rstrip())
        elif fold and int(fold.group(2) or fold.group(1)) > first:
            found.append(line.rstrip())
    return found


def steady(log_path, jsonl_path, marker):
    with open(jsonl_path) as f:
        marked = marked_steps(f, None, marker)
    first = marked[0] if marked else float("inf")
    with open(log_path, errors="replace") as f:
        found = reports_after(f, first)
    for line in found:
        print("report:", line)
    print("reports=%d from=%s" % (len(found), first if marked else "none"))


def main(log_path, jsonl_path, name, skip):
    with open(jsonl_path) as f:
        marked = marked_steps(f, name)
    first = marked[skip] if len(marked) > skip else float("inf")
    with open(log_path, errors="replace") as f:
        host = host_lines(f, first)
    for line in host:
        print("host value:", line)
    print("host=%d marked=%d" % (len(host), len(marked)))


if __name__ == "__main__":
    if sys.argv[1] == "steady":
        steady(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
