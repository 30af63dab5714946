"""Checks a traced training run (tests/gpu/trace/run_trace.sh):

    check_train.py LOG JSONL NAME SKIP

LOG: the live report; JSONL: the steps (ATLAS_TRACE_FILE); NAME: the name
of the training steps. A training step is a step named NAME that holds the
backward pass's marker kernel (bwd_marker, launched from autograd's thread).
From the (SKIP+1)-th training step on (the first ones are warm-up, or are
compared with warm-up), the report must say nothing about host values.
Prints "host=H marked=M": H report lines about host values (scalars, sizes,
grid/block/shmem, ops inserted or removed: every op line that names no
allocation) in those steps, and M the number of training steps."""
import json
import re
import sys


def main(log_path, jsonl_path, name, skip):
    marked = []
    with open(jsonl_path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["name"] == name and "bwd_marker" in rec.get("kernel", ""):
                if not marked or marked[-1] != rec["step"]:
                    marked.append(rec["step"])
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
