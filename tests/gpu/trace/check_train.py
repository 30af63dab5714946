"""Checks a traced training run (tests/gpu/trace/run_trace.sh):

    check_train.py LOG JSONL NAME SKIP

LOG: the live report; JSONL: the steps (ATLAS_TRACE_FILE); NAME: the name
of the training steps. A training step is a step named NAME that holds the
backward pass's marker kernel (bwd_marker, launched from autograd's thread).
From the (SKIP+1)-th training step on (the first ones are warm-up, or are
compared with warm-up), the report must say nothing about host values.
Prints "host=H marked=M": H report lines about host values (scalars, sizes,
grid/block/shmem, ops inserted or removed: every op line that names no
allocation) in those steps, and M the number of training steps.

marked_steps() reads both versions of the trace format (docs/trace.md, "JSON
lines"); tests/integration/test_check_train.py runs it on files the library writes
on the fake driver, so it is checked without a GPU."""
import json
import re
import sys


def marked_steps(lines, name, marker="bwd_marker"):
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
        if hit and rec["name"] == name and (not marked or marked[-1] != rec["step"]):
            marked.append(rec["step"])
    return marked


def main(log_path, jsonl_path, name, skip):
    with open(jsonl_path) as f:
        marked = marked_steps(f, name)
    first = marked[skip] if len(marked) > skip else float("inf")
    host = 0
    index = 0
    with open(log_path, errors="replace") as f:
        for line in f:
            m = re.search(r"differs from #\d+", line)
            if m:
                index = int(re.search(r"\(step (\d+)\) differs", line).group(1))
                continue
            if re.search(r":   ops? ", line) and "alloc#" not in line and index >= first:
                host += 1
                print("host value:", line.rstrip())
    print("host=%d marked=%d" % (host, len(marked)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
