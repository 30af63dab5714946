#!/bin/sh
# Real-GPU checks of atlas-trace (make front-gpu-check): the tool on real programs.
#   tests/gpu/front/run_front.sh BUILD_DIR
# 1. an nvcc program (static cudart) under `atlas-trace --stats`: same output as native, exit 0,
#    and its 500 launches counted (the preload really reached the driver through the tool);
# 2. PyTorch: the exit status a script chooses after CUDA work comes back through the tool;
# 3. examples/demo_steps (the program make demo runs) on the real driver: right results, counted;
# 4. PyTorch + subprocess: the child has the library without --no-children, not with it, while
#    the parent's launches are still counted.
build=${1:-build}
tool=$build/atlas-trace
lib=$(realpath "$build/libatlastrace.so")
out=$build/gpu-front
mkdir -p "$out"
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }

echo "== atlas-trace --stats on an nvcc program (static cudart)"
"$build/gpu/gpu_cudart_static" >"$out/native.out" 2>"$out/native.err"
rn=$?
"$tool" --stats --log="$out/cudart-%p.log" "$build/gpu/gpu_cudart_static" >"$out/tool.out" 2>"$out/tool.err"
rt=$?
log=$(ls "$out"/cudart-*.log 2>/dev/null | tail -1)
if [ $rn -eq 0 ] && [ $rt -eq 0 ]; then pass "exit status 0 native and under atlas-trace"
else fail "exit status native=$rn atlas-trace=$rt"; tail -5 "$out/tool.err"; fi
if cmp -s "$out/native.out" "$out/tool.out"; then pass "output byte-identical under atlas-trace"
else fail "output differs under atlas-trace"; fi
if [ -n "$log" ] && python3 tests/gpu/core/check_stats.py hooks/hooks.def "$log" class launch=500; then
    pass "--stats --log=FILE-%p: 500 launches counted in $log"
else
    fail "--stats: launches not counted (log: ${log:-none})"
fi
rm -f "$out"/cudart-*.log

echo "== examples/demo_steps (its PTX, compiled by the driver) under atlas-trace --stats"
"$tool" --stats --log="$out/demo.log" "$build/examples/demo_steps" >"$out/demo.out" 2>"$out/demo.err"
rc=$?
if [ $rc -eq 0 ] && grep -qx "demo: ok" "$out/demo.out"; then pass "demo_steps: right results on the GPU"
else fail "demo_steps: exit $rc"; cat "$out/demo.out"; tail -5 "$out/demo.err"; fi
if python3 tests/gpu/core/check_stats.py hooks/hooks.def "$out/demo.log" exact cuLaunchKernel=9 \
    cuMemcpyDtoH_v2=4; then pass "demo_steps: 9 launches and 4 blocking copies counted"
else fail "demo_steps: counts"; fi

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== atlas-trace on PyTorch"
    "$tool" --stats --log="$out/torch.log" python3 -c '
import sys, torch
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
sys.exit(3 if float(x.sum()) == float(1 << 20) else 1)' >/dev/null 2>"$out/torch.err"
    rc=$?
    if [ $rc -eq 3 ]; then pass "PyTorch script's exit status 3 came back"
    else fail "PyTorch exit status $rc, expected 3"; tail -5 "$out/torch.err"; fi

    cat >"$out/child.py" <<'PY'
import os, subprocess, sys, torch
x = torch.ones(1024, device="cuda") * 2
torch.cuda.synchronize()
print("child LD_PRELOAD=" + subprocess.run(["sh", "-c", "echo \"$LD_PRELOAD\""],
      capture_output=True, text=True).stdout.strip())
PY
    with=$("$tool" --stats --log="$out/with.log" python3 "$out/child.py" 2>/dev/null)
    without=$("$tool" --no-children --stats --log="$out/without.log" python3 "$out/child.py" 2>/dev/null)
    case "$with" in *"child LD_PRELOAD=$lib"*) pass "without --no-children a subprocess inherits the library";;
        *) fail "without --no-children: $with";; esac
    case "$without" in *"child LD_PRELOAD="*"$lib"*) fail "--no-children: the subprocess still has it: $without";;
        *"child LD_PRELOAD="*) pass "--no-children: the subprocess's LD_PRELOAD lacks the library";;
        *) fail "--no-children: no output: $without";; esac
    if python3 tests/gpu/core/check_stats.py hooks/hooks.def "$out/without.log" class launch=">=1"; then
        pass "--no-children: the parent's launches are still counted"
    else
        fail "--no-children: the parent was not traced"
    fi
else
    echo "SKIP: no PyTorch with CUDA here: the PyTorch checks did not run"
fi

[ $status -eq 0 ] && echo "front-gpu-check: PASS" || echo "front-gpu-check: FAIL"
exit $status
