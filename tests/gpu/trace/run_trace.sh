#!/bin/sh
# Real-GPU suite of step traces (make trace-gpu-check).
#   tests/gpu/trace/run_trace.sh BUILD_DIR
# Prints PASS/FAIL lines; exits non-zero on any failure.
build=${1:-build}
here=tests/gpu/trace
lib=$(realpath "$build/libatlastrace.so")
out=$build/gpu-trace
mkdir -p "$out"
status=0
. $here/common.sh

echo "== CUDA C step loop: the step index and a fresh buffer"
if traced cuda_loop ATLAS_STEP=api -- "$build/gpu/trace_loop"; then
    log=$out/cuda_loop.log
    show "$log"
    n=$(oplines "$log")
    a=$(grep ':   op ' "$log" | grep -c 'add_step.*\[launch\] arg1 @0x8 (4 bytes).*(delta +1)')
    s=$(grep ':   op ' "$log" | grep -c 'scale.*\[launch\] arg0 @0x0 (8 bytes).*: another buffer: alloc#[0-9]* (128 bytes, made .*; alloc#[0-9]* still allocated')
    # 5 steps: step 2's report names exactly the two parameters (the new
    # buffer's site, the old one still allocated); steps 3-5 change alike: one line
    fold='steps 3-5 ("loop"): add_step arg1 +1 per step, 0x1 -> 0x4, scale arg0 another buffer each step (3 steps)'
    if [ "$n" -eq 2 ] && [ "$a" -eq 1 ] && [ "$s" -eq 1 ] && grep -qF "$fold" "$log" &&
        grep -q 'steps=5 compared=4' "$log"; then
        pass "cuda_loop: the report names add_step arg1 and scale arg0, and nothing else; the repeats in one line"
    else
        fail "cuda_loop: $n op lines, $a add_step arg1, $s scale arg0 (want 2, 1, 1; the line '$fold'; and steps=5 compared=4)"
    fi
    "$build/atlas-diff" "$out/cuda_loop.jsonl" >"$out/cuda_loop.offline"
    rc=$?
    if [ $rc -eq 1 ] && [ "$(grep -c '^  op ' "$out/cuda_loop.offline")" -eq 2 ] &&
        grep -qF "$fold" "$out/cuda_loop.offline"; then
        pass "cuda_loop: atlas-diff on the JSON lines exits 1 with the same lines"
    else
        fail "cuda_loop: atlas-diff exited $rc; its report:"
        head -20 "$out/cuda_loop.offline"
    fi
fi

nvtx="NVTX_INJECTION64_PATH=$lib ATLAS_STEP=nvtx:step"
echo "== PyTorch + Triton, NVTX steps, a changing position argument"
if traced torch_changing $nvtx -- python3 $here/torch_nvtx.py changing; then
    log=$out/torch_changing.log
    show "$log"
    n=$(oplines "$log")
    a=$(grep ':   op ' "$log" | grep -c 'add_pos.*\[launch\] arg1 @0x8 (4 bytes).*(delta +1)')
    # step 2's report, then steps 3-5 in one line
    if [ "$n" -eq 1 ] && [ "$a" -eq 1 ] && grep -q 'steps=5 compared=4' "$log" &&
        grep -q 'steps 3-5 ("step"): add_pos arg1 +1 per step, ' "$log"; then
        pass "torch_changing: the report names add_pos's position argument, and nothing else"
    else
        fail "torch_changing: $n op lines, $a naming add_pos arg1 (want 1, 1; a line 'steps 3-5 (\"step\"): add_pos arg1 +1 per step'; and steps=5 compared=4)"
    fi
    if grep -q 'frozen value: add_pos arg1 changed in 4 steps: +1 per step' "$log"; then
        pass "torch_changing: the frozen-value summary says add_pos arg1 grows by one per step"
    else
        fail "torch_changing: no 'add_pos arg1 changed in 4 steps: +1 per step' summary line"
        grep 'frozen value' "$log"
    fi
fi

echo "== PyTorch + Triton, NVTX steps, nothing changing"
if traced torch_constant $nvtx -- python3 $here/torch_nvtx.py constant; then
    log=$out/torch_constant.log
    show "$log"
    if [ "$(oplines "$log")" -eq 0 ] && grep -q 'steps=5 compared=4 identical=4' "$log"; then
        pass "torch_constant: five identical steps, no report"
    else
        fail "torch_constant: expected no report and steps=5 compared=4 identical=4"
    fi
fi

echo "== PyTorch CUDA graph captured three times"
if traced torch_graph ATLAS_STEP=capture -- python3 $here/torch_nvtx.py graph; then
    log=$out/torch_graph.log
    show "$log"
    if grep -q 'capture #2 is replay-safe: identical to #1' "$log"; then
        pass "torch_graph: the second capture is replay-safe"
    else
        fail "torch_graph: no 'capture #2 is replay-safe' line"
    fi
    if grep -q 'capture #3 is NOT replay-safe' "$log"; then
        pass "torch_graph: the third capture (another scalar) is not replay-safe"
    else
        fail "torch_graph: the changed scalar in capture #3 was not reported"
    fi
fi

echo "== CUDA C graph captured once, replayed ten times with a sync after each"
if traced graph_replay -- "$build/gpu/trace_graph"; then
    log=$out/graph_replay.log
    show "$log"
    # the final copy is a step of its own (another kind of op: not compared)
    if ! grep -q 'differs' "$log" && grep -q 'compared=9 identical=9 differing=0' "$log"; then
        pass "graph_replay: ten replays, no report"
    else
        fail "graph_replay: expected no report and compared=9 identical=9 differing=0"
    fi
fi

echo "== CUDA C, four threads with their own streams, identical steps"
for m in same ctx; do
    if traced threads_$m -- "$build/gpu/trace_threads" $m; then
        log=$out/threads_$m.log
        show "$log"
        if ! grep -q 'differs' "$log" && grep -q 'steps=200 compared=196 identical=196' "$log"; then
            pass "threads_$m: 4 threads x 50 steps, each thread's its own: no report"
        else
            fail "threads_$m: expected no report and steps=200 compared=196 identical=196"
        fi
    fi
done

echo "== CUDA C, four threads, one of them changes a scalar"
if traced threads_change -- "$build/gpu/trace_threads" change; then
    log=$out/threads_change.log
    show "$log"
    named=$(grep -c 'step "cuStreamSynchronize" (thread worker-2, stream 0x[0-9a-f]*) #2[12] ' "$log")
    # each step passes v and -v (two add_step launches): two lines a report
    if [ "$named" -eq 2 ] && [ "$(oplines "$log")" -eq 4 ] &&
        [ "$(grep ':   op ' "$log" | grep -c 'add_step.*arg1 @0x8 (4 bytes)')" -eq 4 ]; then
        pass "threads_change: the two reports name worker-2, its stream and add_step arg1"
    else
        fail "threads_change: $named headers naming worker-2 (want 2), $(oplines "$log") op lines (want 4)"
    fi
fi

# training: no host value reported once warmed up, and every step holds the
# backward pass (its marker kernel, launched from autograd's thread)
echo "== PyTorch training (MLP, SGD), NVTX steps"
if traced torch_train_nvtx $nvtx -- python3 $here/torch_train.py nvtx; then
    log=$out/torch_train_nvtx.log
    show "$log"
    r=$(python3 $here/check_train.py "$log" "$out/torch_train_nvtx.jsonl" step 1 | tail -n 1)
    if [ "$r" = "host=0 marked=10" ] && grep -q 'steps=10 compared=' "$log"; then
        pass "torch_train_nvtx: no host value reported; all 10 steps hold the backward pass"
    else
        fail "torch_train_nvtx: $r (want host=0 marked=10, and steps=10)"
    fi
fi

echo "== PyTorch training (MLP, SGD), steps ended by loss.item()"
if traced torch_train_sync -- python3 $here/torch_train.py sync; then
    log=$out/torch_train_sync.log
    show "$log"
    # 3 warm-up iterations, then 10: from the fifth on, a training step is
    # compared with a warmed-up one
    r=$(python3 $here/check_train.py "$log" "$out/torch_train_sync.jsonl" cuStreamSynchronize 4 |
        tail -n 1)
    if [ "$r" = "host=0 marked=13" ]; then
        pass "torch_train_sync: no host value reported; all 13 steps hold the backward pass"
    else
        fail "torch_train_sync: $r (want host=0 marked=13)"
    fi
fi

# two runs of one program: pointers by allocation, host addresses of copies
# not compared across processes, residue marks from the files: no host value
# differs, so atlas-diff exits 0
echo "== PyTorch training, two runs compared with atlas-diff"
if [ -f "$out/torch_train_nvtx.jsonl" ] &&
    traced torch_train_nvtx2 $nvtx -- python3 $here/torch_train.py nvtx; then
    "$build/atlas-diff" "$out/torch_train_nvtx.jsonl" "$out/torch_train_nvtx2.jsonl" \
        >"$out/torch_train_two.offline"
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "torch_train: two runs compared with atlas-diff: exit 0"
    else
        fail "torch_train: two runs compared with atlas-diff exited $rc; its report:"
        grep -v '^  op .*alloc#' "$out/torch_train_two.offline" | head -20
    fi
fi

# issue #30's programs: Flax under jax.jit, DDP over NCCL, eager against captured
sh $here/run_programs.sh "$build" || status=1

exit $status
