"""The parser of tests/gpu/trace/check_train.py (the GPU suite's PyTorch
check) on trace files the library writes on the fake driver, and on a file
of the format's version 1, so a format change is caught without a GPU:

    python3 tests/integration/test_check_train.py BUILD_DIR

Prints "check_train: ok" or fails with what differed."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "trace"))
from check_train import host_lines, marked_steps, reports_after  # noqa: E402

V1 = """\
{"step":1,"name":"s","op":0,"stream":"0x10","kind":"launch","kernel":"_Z10bwd_markerPf","grid":[1,1,1],"block":[1,1,1],"shmem":0,"cluster":[0,0,0],"exact":1,"params":[{"i":0,"off":0,"size":8,"hex":"0010000000000000","alloc":"alloc#3+0x10"}]}
{"step":1,"name":"s","thread":"main","stream":"0x10","end":true,"ops":1}
{"step":2,"name":"s","op":0,"stream":"0x10","kind":"memset","ptr":"0x10","value":0,"elem":4,"count":1,"pitch":0,"height":0}
{"step":2,"name":"s","end":true,"ops":1}
{"step":3,"name":"t","op":0,"stream":"0x10","kind":"launch","kernel":"_Z10bwd_markerPf","grid":[1,1,1],"block":[1,1,1],"shmem":0,"cluster":[0,0,0],"exact":1,"params":[{"i":0,"off":0,"size":8,"hex":"0010000000000000"}]}
{"step":3,"name":"t","end":true,"ops":1}
{"step":4,"name":"s","op":0,"stream":"0x10","kind":"launch","kernel":"_Z10bwd_markerPf","grid":[1,1,1],"block":[1,1,1],"shmem":0,"cluster":[0,0,0],"exact":1,"params":[{"i":0,"off":0,"size":8,"hex":"0010000000000000"}]}
{"step":4,"name":"s","op":1,"stream":"0x10","kind":"launch","kernel":"_Z10bwd_markerPf","grid":[1,1,1],"block":[1,1,1],"shmem":0,"cluster":[0,0,0],"exact":1,"params":[{"i":0,"off":0,"size":8,"hex":"0010000000000000"}]}
{"step":4,"name":"s","end":true,"ops":2}
"""


def expect(what, got, want):
    if got != want:
        sys.exit("check_train: %s: %r, expected %r" % (what, got, want))


def main(build):
    # version 1: steps 1 and 4 are "s" steps with the marker
    expect("version 1", marked_steps(V1.splitlines(True), "s"), [1, 4])
    expect("version 1, other name", marked_steps(V1.splitlines(True), "t"), [3])

    # version 2, as the library writes it: three steps of the scalar
    # scenario, each launching add_step (the marker here) between two fills
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        env = dict(os.environ, ATLAS_TRACE="1", ATLAS_TRACE_FILE=path, ATLAS_LOG="/dev/null",
                   LD_PRELOAD=os.path.realpath(os.path.join(build, "libatlastrace.so")),
                   LD_LIBRARY_PATH=os.path.join(build, "fake"))
        subprocess.run([os.path.join(build, "tests", "trace_steps"), "scalar", "3"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            lines = f.readlines()
    expect("the header", lines[0], '{"format":"atlastrace-steps","version":2}\n')
    name = "cuStreamSynchronize"
    expect("version 2", marked_steps(lines, name, "add_step"), [1, 2, 3])
    expect("version 2, no such kernel", marked_steps(lines, name), [])
    expect("version 2, no such step", marked_steps(lines, "step", "add_step"), [])

    # the report lines about host values, from live reports: step 2's op
    # line and the folded steps 3-5 in the scalar scenario; nothing when
    # nothing changes; a step of a new shape counts
    def report(scenario, steps):
        env = dict(os.environ, ATLAS_TRACE="1",
                   LD_PRELOAD=os.path.realpath(os.path.join(build, "libatlastrace.so")),
                   LD_LIBRARY_PATH=os.path.join(build, "fake"))
        env.pop("ATLAS_LOG", None)  # the report on stderr
        out = subprocess.run([os.path.join(build, "tests", "trace_steps"), scenario, steps],
                             env=env, check=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True).stderr
        return out.splitlines(True)
    expect("host lines, scalar", len(host_lines(report("scalar", "5"), 1)), 2)
    expect("host lines, scalar, from step 4", len(host_lines(report("scalar", "5"), 4)), 1)
    expect("host lines, scalar, past the end", len(host_lines(report("scalar", "5"), 6)), 0)
    expect("host lines, same", len(host_lines(report("same", "5"), 1)), 0)
    expect("host lines, insert", len(host_lines(report("insert", "3"), 1)), 1)
    # the steady state: nothing after the last step reported on
    expect("reports after step 1, scalar", len(reports_after(report("scalar", "5"), 1)), 2)
    expect("reports after step 4, scalar", len(reports_after(report("scalar", "5"), 4)), 1)
    expect("reports after step 5, scalar", len(reports_after(report("scalar", "5"), 5)), 0)
    expect("reports after step 1, warmup", len(reports_after(report("warmup", "40"), 1)), 2)
    expect("reports after step 12, warmup", len(reports_after(report("warmup", "40"), 12)), 1)
    print("check_train: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build")
