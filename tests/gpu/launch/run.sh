#!/bin/sh
# Real-GPU suite of libatlaslaunch: run from the repository root by `make launch-gpu-check`.
# Usage: tests/gpu/launch/run.sh BUILD_DIR
build=${1:-build}
status=0

echo "== launch_gpu_test"
"$build/tests/gpu/launch/launch_gpu_test" || status=1

# The fault poisons its context, so it runs in a process of its own.
echo "== launch_gpu_test fault (ATLAS_DEBUG_SYNC_KERNELS=1)"
ATLAS_DEBUG_SYNC_KERNELS=1 "$build/tests/gpu/launch/launch_gpu_test" fault || status=1

for ex in "$build"/examples/launch_*; do
    case $ex in *.o|*.d) continue ;; esac
    [ -x "$ex" ] || continue
    echo "== $ex"
    if "$ex"; then echo "PASS: $ex"; else echo "FAIL: $ex"; status=1; fi
done

[ $status -eq 0 ] && echo "launch-gpu-check: PASS" || echo "launch-gpu-check: FAIL"
exit $status
