#!/bin/sh
# Real-GPU checks of atlas-trace (make front-gpu-check): the tool on real programs.
#   tests/gpu/front/run_front.sh BUILD_DIR
# 1. an nvcc program (static cudart) under `atlas-trace --stats`: same output as native, exit 0,
#    and its 500 launches counted (the preload really reached the driver through the tool);
# 2. PyTorch: the exit status a script chooses after CUDA work comes back through the tool;
# 3. examples/demo_steps (the program make demo runs) on the real driver: right results, counted;
# 4. PyTorch + subprocess: the child has the library without --no-children, not with it, while
#    the parent's launches are still counted;
# 5. `atlas-trace --trace=nvtx:step python ...` on PyTorch + Triton (NVTX steps through the
#    tool alone): the report names the changing argument, the JSON lines and the Chrome trace
#    are written and read back;
# 6. two ranks of one script (torchrun --nproc_per_node=2 when there are two GPUs, else two
#    processes with RANK=0/1), one trace file per rank through %r: atlas-diff finds no
#    difference when the ranks run the same steps, and names step #3 when rank 1 branches;
# 7. the wheel (make wheel) pip-installed offline into a venv that sees the system's PyTorch:
#    its atlas-trace console command traces a PyTorch script with the venv's library;
# 8. make demo's run on the real driver (docs/reports.md): at most 15 atlas lines, the overrun's
#    allocation named by file and line where libdw.so.1 is installed (symbol+offset where not),
#    the --report file valid against docs/findings.schema.json, and a suppression entry for the
#    overrun turning --error-exitcode's 3 into the program's 0.
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

if python3 -c 'import torch, triton; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== atlas-trace --trace=nvtx:step on PyTorch + Triton"
    rm -f "$out"/nvtx-*.jsonl "$out"/nvtx-*.json "$out"/nvtx.log
    "$tool" --trace=nvtx:step --json="$out/nvtx-%p.jsonl" --chrome="$out/nvtx-%p.json" \
        --log="$out/nvtx.log" python3 tests/gpu/trace/torch_nvtx.py changing >"$out/nvtx.out" 2>&1
    rc=$?
    # step 2's diff names it; steps 3-5 change it the same way: one folded line (issue #30)
    a=$(grep ':   op ' "$out/nvtx.log" | grep -c 'add_pos.*\[launch\] arg1 @0x8 (4 bytes).*(delta +1)')
    f=$(grep -c ': steps 3-5 ("step"): add_pos arg1 +1 per step' "$out/nvtx.log")
    if [ $rc -eq 0 ] && [ "$a" -eq 1 ] && [ "$f" -eq 1 ] && grep -q 'steps=5 compared=4' "$out/nvtx.log"; then
        pass "--trace=nvtx:step: 5 NVTX steps, add_pos's position argument named in step 2's diff and folded for steps 3-5"
    else
        fail "--trace=nvtx:step: exit $rc, $a diff lines and $f folded lines naming add_pos arg1 (want 1 and 1)"; tail -20 "$out/nvtx.log"
    fi
    j=$(ls "$out"/nvtx-*.jsonl 2>/dev/null | head -1)
    "$build/atlas-diff" "$j" >"$out/nvtx-diff.out" 2>&1
    rc=$?
    if [ -n "$j" ] && [ $rc -eq 1 ] && grep -q 'add_pos' "$out/nvtx-diff.out"; then
        pass "--json: atlas-diff reads the file back and names add_pos (exit 1)"
    else
        fail "--json: atlas-diff on ${j:-no file}: exit $rc"; tail -5 "$out/nvtx-diff.out"
    fi
    c=$(ls "$out"/nvtx-*.json 2>/dev/null | head -1)
    if [ -n "$c" ] && python3 -c '
import json, sys
t = open(sys.argv[1]).read().strip()  # an array; its closing bracket is optional
t = t[:-1] if t.endswith(",") else t
ev = json.loads(t if t.endswith("]") else t + "]")
steps = [e for e in ev if e.get("cat") == "step"]
k = [e for e in ev if "add_pos" in str(e.get("name", ""))]
sys.exit(0 if len(steps) >= 5 and len(k) >= 5 else 1)' "$c"; then
        pass "--chrome: the Chrome trace loads, with 5 steps and the add_pos launches"
    else
        fail "--chrome: ${c:-no file} does not load or lacks the steps"
    fi

    ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
    for how in same branch; do
        rm -f "$out"/rank-*.jsonl
        if [ "$ngpu" -ge 2 ] && command -v torchrun >/dev/null 2>&1; then
            way="torchrun --nproc_per_node=2"
            "$tool" --trace=nvtx:step --json="$out/rank-%r.jsonl" --log="$out/rank-$how-%r.log" \
                torchrun --nproc_per_node=2 tests/gpu/front/torch_ranks.py $how >"$out/ranks-$how.out" 2>&1
            rc=$?
        else
            way="two processes, RANK=0/1, one GPU"
            rc=0
            for r in 0 1; do
                RANK=$r LOCAL_RANK=$r "$tool" --trace=nvtx:step --json="$out/rank-%r.jsonl" \
                    --log="$out/rank-$how-%r.log" python3 tests/gpu/front/torch_ranks.py $how \
                    >>"$out/ranks-$how.out" 2>&1 || rc=$?
            done
        fi
        if [ $rc -ne 0 ] || [ ! -s "$out/rank-0.jsonl" ] || [ ! -s "$out/rank-1.jsonl" ]; then
            fail "ranks ($how, $way): exit $rc, files: $(ls "$out"/rank-*.jsonl 2>/dev/null | tr '\n' ' ')"
            tail -5 "$out/ranks-$how.out"
            continue
        fi
        "$build/atlas-diff" "$out/rank-0.jsonl" "$out/rank-1.jsonl" >"$out/ranks-$how.diff" 2>&1
        rc=$?
        if [ $how = same ] && [ $rc -eq 0 ]; then
            pass "ranks ($way): same steps on both ranks, atlas-diff finds none differing (exit 0)"
        elif [ $how = branch ] && [ $rc -eq 1 ] && grep -q 'step "step" #3' "$out/ranks-$how.diff" &&
            [ "$(grep -c 'differs from' "$out/ranks-$how.diff")" -eq 1 ]; then
            pass "ranks ($way): rank 1's branch found by atlas-diff in step #3 only"
        else
            fail "ranks ($how, $way): atlas-diff exit $rc"; head -20 "$out/ranks-$how.diff"
        fi
        sed 's/^/    /' "$out/ranks-$how.diff" | head -12
    done
else
    echo "SKIP: no PyTorch+Triton with CUDA here: the NVTX and rank checks did not run"
fi

echo "== the wheel in a venv: its atlas-trace on PyTorch"
whl=$(ls "$build"/atlastrace-*.whl 2>/dev/null | head -n 1)
if [ -z "$whl" ]; then
    fail "no wheel in $build (make wheel)"
elif ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "SKIP: no PyTorch with CUDA here: the wheel was not run on it"
elif ! { rm -rf "$out/venv" && python3 -m venv --system-site-packages "$out/venv"; } >"$out/venv.err" 2>&1; then
    echo "SKIP: python3 -m venv failed here ($(tail -1 "$out/venv.err")): the wheel was not run"
else
    # python3 may itself be a venv's (the H200's is /opt/torch/.venv): --system-site-packages
    # then reaches the base interpreter's packages only, so a .pth names python3's own
    python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
        >"$(echo "$out"/venv/lib/python3*/site-packages)/outer-python.pth"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$out/venv/bin/python" -m pip install -q --no-index --no-deps "$whl" \
        >"$out/venv-pip.out" 2>&1 || fail "pip install of $whl (log: $out/venv-pip.out)"
    got=$("$out/venv/bin/atlas-trace" --stats --log="$out/wheel.log" "$out/venv/bin/python" \
        "$out/child.py" 2>"$out/wheel.err")
    case "$got" in
    *"child LD_PRELOAD="*"/site-packages/atlastrace/lib/libatlastrace.so"*)
        pass "wheel: the venv's atlas-trace preloads the venv's library ($got)" ;;
    *) fail "wheel: the venv's atlas-trace ran '$got'"; tail -5 "$out/wheel.err" ;;
    esac
    if python3 tests/gpu/core/check_stats.py hooks/hooks.def "$out/wheel.log" class launch=">=1"; then
        pass "wheel: PyTorch's launches counted through the venv's atlas-trace"
    else
        fail "wheel: PyTorch not traced (log: $out/wheel.log)"
    fi
fi

echo "== make demo's run: reports (file:line, the findings file, a suppression)"
demo="--trace --redzone=256 --redzone-check=launch"
# shellcheck disable=SC2086
"$tool" $demo --error-exitcode=3 --report="$out/demo-findings.jsonl" "$build/examples/demo_steps" \
    >"$out/demo2.out" 2>"$out/demo2.err"
rc=$?
n=$(grep -c '^atlas\[' "$out/demo2.err")
if [ "$rc" -eq 3 ] && [ "$n" -le 15 ]; then pass "demo: $n atlas lines, exit status 3 (the overrun)"
else fail "demo: exit $rc, $n atlas lines"; cat "$out/demo2.err"; fi
# file and line from libdw, else from an addr2line program (src/symbols.c); neither: main+offset
libdw=no a2l=no
for f in /usr/lib/*/libdw.so.1 /usr/lib64/libdw.so.1; do [ -e "$f" ] && libdw=yes; done
command -v addr2line >/dev/null 2>&1 || command -v llvm-addr2line >/dev/null 2>&1 && a2l=yes
if { [ $libdw = yes ] || [ $a2l = yes ]; } &&
    grep -q 'allocated at main (demo_steps.c:[0-9]*)' "$out/demo2.err"; then
    pass "demo: the allocation named by file and line (libdw $libdw, addr2line $a2l)"
elif [ $libdw = no ] && [ $a2l = no ] && grep -q 'allocated at main+0x' "$out/demo2.err"; then
    pass "demo: neither libdw.so.1 nor addr2line here: the allocation named by symbol+offset"
else fail "demo: allocation site (libdw $libdw, addr2line $a2l)"; grep overrun "$out/demo2.err"; fi
if python3 tests/harness/validate_findings.py docs/findings.schema.json "$out/demo-findings.jsonl" &&
    grep -q '"kind":"overrun"' "$out/demo-findings.jsonl"; then
    pass "demo: the findings file validates and holds the overrun"
else fail "demo: findings file $out/demo-findings.jsonl"; fi
printf '{\n   the demo overrun\n   atlas:overrun\n   fun:main\n}\n' >"$out/demo.supp"
# shellcheck disable=SC2086
"$tool" $demo --error-exitcode=3 --suppressions="$out/demo.supp" "$build/examples/demo_steps" \
    >/dev/null 2>"$out/demo3.err"
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q 'redzone overrun' "$out/demo3.err" &&
    grep -q 'suppressed: 1 finding (1 overrun)' "$out/demo3.err"; then
    pass "demo: the suppressed overrun is not printed and not counted (exit 0)"
else fail "demo: with the suppression: exit $rc"; tail -5 "$out/demo3.err"; fi

[ $status -eq 0 ] && echo "front-gpu-check: PASS" || echo "front-gpu-check: FAIL"
exit $status
