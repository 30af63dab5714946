#!/bin/sh
# Real-GPU suite of race detection (make races-gpu-check, part of make gpu-check).
#   tests/gpu/races/run_races.sh BUILD_DIR
# Seeded races in CUDA C, PyTorch and CuPy must each be named (both sides, the missing
# edge); their fixed versions and correct multi-stream programs (CUDA C in the ways CUDA's
# samples teach, PyTorch training, DDP over NCCL with one rank, CuPy, JAX) must report none.
# One PASS/FAIL line per case; then the cost on a GPT-2-like PyTorch training step, races
# on against off and native (and the step trace, for comparison), median of interleaved
# runs (RACES_BENCH_ROUNDS, default 3). Logs stay in BUILD_DIR/gpu-races/. Exits non-zero if
# a case failed. Each run is stopped after 300 s (a hang fails its case, exit status 124).
build=${1:-build}
here=tests/gpu/races
lib=$(realpath "$build/libatlastrace.so")
out=$build/gpu-races
mkdir -p "$out"
rm -f "$out"/*
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }

# run NAME ENV... -- CMD...: CMD under the preload with ENV and ATLAS_RACES=1; the log in
# $out/NAME.log, stdout and stderr beside it; the exit status in $rc
run() {
    name=$1
    shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout 300 env ATLAS_RACES=1 $envs ATLAS_LOG="$out/$name.log" LD_PRELOAD="$lib" "$@" \
        >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
    touch "$out/$name.log"
}

# raced NAME WHAT PATTERN...: exit 0, "ok", a race named with its missing edge, and every
# PATTERN (grep -E) on some line of the log; the first block is shown
raced() {
    name=$1 what=$2
    shift 2
    log=$out/$name.log
    why=""
    [ "$rc" -eq 0 ] && grep -q '^ok$' "$out/$name.out" || why="$why; exit status $rc, no ok"
    grep -q 'race: alloc#' "$log" || why="$why; no race reported"
    grep -q 'race:   missing edge: ' "$log" || why="$why; no missing edge"
    for p in "$@"; do
        grep -Eq -- "$p" "$log" || why="$why; no line matching '$p'"
    done
    if [ -z "$why" ]; then
        pass "$name: $what"
    else
        fail "$name: $what:${why#;} (log: $log)"
        tail -3 "$out/$name.err"
        # what the detector counted, and what it watched: the log stays on the machine, and
        # a FAIL seen once (torch_allreduce_raced, bench/RESULTS.md section 19) said nothing
        grep -E 'races: [0-9,]* found|suppressed:|summary:|races: ' "$log" | grep -v 'race: ' |
            head -n 6 | cut -c1-400
    fi
    grep -m4 -E 'race: alloc#|race:   (1st|2nd|missing edge):' "$log" | cut -c1-400
}

# clean NAME WHAT: exit 0, "ok", no race reported, the exit summary says 0 found
clean() {
    name=$1 what=$2
    log=$out/$name.log
    why=""
    [ "$rc" -eq 0 ] && grep -q '^ok$' "$out/$name.out" || why="$why; exit status $rc, no ok"
    grep -q 'race: alloc#' "$log" && why="$why; a race reported"
    grep -q 'races: 0 found' "$log" || why="$why; no summary with 0 found"
    if [ -z "$why" ]; then
        pass "$name: $what ($(sed -n 's/.*races: 0 found (0 distinct), \([0-9,]* possible\).*accesses checked on \([0-9,]*\) streams.*/\1, \2 streams/p' "$log"))"
    else
        fail "$name: $what:${why#;} (log: $log)"
        tail -3 "$out/$name.err"
        grep -m8 -E 'race: alloc#|race:   ' "$log" | cut -c1-400
    fi
}

# ---- CUDA C ------------------------------------------------------------------------------
c=$build/gpu/races_cases
WRITES='race:   1st: cuMemcpy[A-Za-z0-9_]* writes \+0\.\.\+4194303, on stream 0x'
READS='race:   2nd: launch#[0-9]+ kernel=consume\(float const\*, float\*, int\) parameter 0 \(reads\) at \+0'
run c_side_copy_raced -- "$c" side_copy raced
raced c_side_copy_raced "a copy on a side stream read without a wait" "$WRITES" "$READS" \
    "missing edge: stream 0x[0-9a-f]+ \(non-blocking\) never waited"
run c_wrong_event_raced -- "$c" wrong_event raced
raced c_wrong_event_raced "a wait on the wrong event" "$WRITES" "$READS" \
    "last waited for event 0x[0-9a-f]+, recorded on stream 0x[0-9a-f]+ .*, not on stream"
run c_early_record_raced -- "$c" early_record raced
raced c_early_record_raced "an event recorded before the work" "$WRITES" "$READS" \
    "before the 1st: the record must come after the 1st"
run c_legacy_raced -- "$c" legacy raced
raced c_legacy_raced "the legacy default stream does not order a non-blocking stream" "$WRITES" \
    "2nd: .* on the legacy default stream" "a non-blocking stream is not ordered by the legacy"
run c_ptds_raced -- "$build/gpu/races_cases_ptds" ptds raced
raced c_ptds_raced "two threads' per-thread default streams" \
    "1st: cuMemcpy.* on the per-thread default stream of thread [0-9]+" \
    "2nd: .* on the per-thread default stream of thread [0-9]+" \
    "the per-thread default streams of two threads do not order each other"
run c_graph_raced -- "$c" graph raced
raced c_graph_raced "a graph launch's memset node read on another stream" \
    "1st: cuGraphLaunch[A-Za-z0-9_]* of a graph \(its node cuMemset[A-Za-z0-9_]* writes \+0\.\.\+4194303, captured at" \
    "$READS"
run c_host_fn_raced -- "$c" host_fn raced
raced c_host_fn_raced "a host function enqueued before the copy the host waits for" "$WRITES" \
    "$READS" "the host last synchronised with stream 0x[0-9a-f]+ .*through a host function at"
for k in side_copy wrong_event early_record legacy graph host_fn; do
    run "c_${k}_fixed" -- "$c" $k fixed
    clean "c_${k}_fixed" "the $k case, ordered"
done
run c_ptds_fixed -- "$build/gpu/races_cases_ptds" ptds fixed
clean c_ptds_fixed "per-thread default streams ordered by an event"
# issue #44: the writer is a kernel (float *, no const); its first launch is watched
KWRITES='race:   1st: launch#[0-9]+ kernel=produce\(float\*, int\) parameter 0 \(writes: \+[0-9]+\.\.\+[0-9]+ from it changed at (this launch|launch#[0-9]+)\) at \+0'
KDOWN='race:   2nd: cuMemcpy[A-Za-z0-9_]* reads \+0\.\.\+4194303, on stream 0x'
run c_kw_copy_raced -- "$c" kw_copy raced
raced c_kw_copy_raced "a kernel's write read by a copy on another stream" "$KWRITES" "$KDOWN"
run c_kw_kernel_raced -- "$c" kw_kernel raced
raced c_kw_kernel_raced "a kernel's write read by a kernel on another stream" "$KWRITES" "$READS"
run c_kw_legacy_raced -- "$c" kw_legacy raced
raced c_kw_legacy_raced "a kernel on a non-blocking stream, read on the legacy stream" "$KWRITES" \
    "2nd: .* on the legacy default stream" "a non-blocking stream is not ordered by the legacy"
run c_kw_early_raced -- "$c" kw_early raced
raced c_kw_early_raced "an event recorded before the kernel's write" "$KWRITES" "$KDOWN" \
    "before the 1st: the record must come after the 1st"
run c_kw_extern_raced -- "$c" kw_extern raced
raced c_kw_extern_raced "an extern \"C\" kernel's write read by a copy" \
    "1st: launch#[0-9]+ kernel=kscale parameter 0 \(writes: \+[0-9]+\.\.\+[0-9]+ from it changed at this launch\)" \
    "$KDOWN"
run c_kw_threads_raced -- "$c" kw_threads raced
raced c_kw_threads_raced "two host threads' kernels on their own streams" "$KWRITES" "$READS"
run c_kw_graph_raced -- "$c" kw_graph raced
raced c_kw_graph_raced "a graph launch's kernel write read by a copy on another stream" \
    "1st: cuGraphLaunch[A-Za-z0-9_]* of a graph \(its node kernel=produce\(float\*, int\) parameter 0 \(writes: \+[0-9]+\.\.\+[0-9]+ from it changed at a watched launch of the graph\)" \
    "$KDOWN"
for k in kw_copy kw_kernel kw_legacy kw_early kw_extern kw_threads kw_graph; do
    run "c_${k}_fixed" -- "$c" $k fixed
    clean "c_${k}_fixed" "the $k case, ordered"
done
run c_kw_disjoint -- "$c" kw_disjoint
clean c_kw_disjoint "kernels on 4 streams writing disjoint parts of one allocation"
run c_kw_shared_read -- "$c" kw_shared_read
clean c_kw_shared_read "kernels on 4 streams reading one buffer through float *"
grep -h 'launches\? watched' "$out"/c_kw_*.log | sed 's/.*accesses checked/  watch line: .../' | sort | uniq -c | head -5
run c_overlap -- "$c" overlap
clean c_overlap "copies and kernels overlapped on 4 streams, each on its chunk"
run c_many -- "$c" many
clean c_many "16 concurrent streams"
run c_priorities -- "$c" priorities
clean c_priorities "stream priorities, producer and consumer ordered by events"
run c_timing -- "$c" timing
clean c_timing "events for timing only"

# ---- PyTorch -----------------------------------------------------------------------------
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    t() { name=$1; shift; run "$name" -- python3 "$here/races_torch.py" "$@"; }
    t torch_side_raced side raced
    raced torch_side_raced "a side stream without wait_stream" \
        "1st: launch#[0-9]+ kernel=void at::native::[a-z_]*elementwise_kernel.* \(the operator's output: writes\)" \
        "2nd: launch#[0-9]+ kernel=void at::native::[a-z_]*elementwise_kernel.* \(reads\)"
    t torch_side_fixed side fixed
    clean torch_side_fixed "a side stream after wait_stream"
    t torch_allreduce_raced allreduce raced
    raced torch_allreduce_raced "an all-reduce result updated on the compute stream without waiting" \
        "2nd: launch#[0-9]+ kernel=.* \(the operator's output: writes\)"
    t torch_allreduce_fixed allreduce fixed
    clean torch_allreduce_fixed "an all-reduce result used after work.wait()"
    t torch_allgather_raced allgather raced
    raced torch_allgather_raced "an all-gather output read on the compute stream without waiting" \
        "2nd: launch#[0-9]+ kernel=.* \(reads\)"
    t torch_allgather_fixed allgather fixed
    clean torch_allgather_fixed "an all-gather output read after work.wait()"
    if python3 -c 'import triton' 2>/dev/null; then
        t torch_triton_raced triton raced
        raced torch_triton_raced "a Triton kernel's write on a side stream read without wait_stream" \
            "1st: launch#[0-9]+ kernel=fill_kernel parameter 0 \(writes: .*changed at launch#[0-9]+\)" \
            "2nd: launch#[0-9]+ kernel=.*elementwise_kernel.* \(reads\)"
        t torch_triton_fixed triton fixed
        clean torch_triton_fixed "the same after wait_stream"
    else
        echo "SKIP: triton not found"
    fi
    t torch_train train
    clean torch_train "training with batches copied in on a side stream"
    t torch_ddp ddp
    clean torch_ddp "DDP over NCCL, one rank"
else
    fail "PyTorch with CUDA not found: its cases were not run"
fi

# ---- CuPy and JAX ------------------------------------------------------------------------
if python3 -c 'import cupy' 2>/dev/null; then
    run cupy_side_raced -- python3 $here/races_cupy.py side raced
    raced cupy_side_raced "an array set on one stream, read on another without an event" \
        "1st: cuMemcpy[A-Za-z0-9_]* writes \+0\.\.\+4194303" "2nd: launch#[0-9]+ kernel="
    run cupy_side_fixed -- python3 $here/races_cupy.py side fixed
    clean cupy_side_fixed "the same after waiting for an event"
    run cupy_raw_raced -- python3 $here/races_cupy.py rawkernel raced
    raced cupy_raw_raced "a RawKernel's write read by a copy on another stream" \
        "1st: launch#[0-9]+ kernel=scale_inplace parameter 0 \(writes: " \
        "2nd: cuMemcpy[A-Za-z0-9_]* reads \+0\.\.\+4194303"
    run cupy_raw_fixed -- python3 $here/races_cupy.py rawkernel fixed
    clean cupy_raw_fixed "the same after an event"
    run cupy_streams -- python3 $here/races_cupy.py streams
    clean cupy_streams "8 streams handing results to the null stream by events"
else
    fail "CuPy not found: its cases were not run"
fi
if python3 -c 'import jax' 2>/dev/null; then
    run jax_train -- python3 $here/races_jax.py
    clean jax_train "a jitted training step with a transfer each step"
    # a custom call that writes its output on a side stream of its own (issue #44)
    ffi=$build/gpu/races_jax_ffi.so
    inc=$(python3 -c 'import jax.ffi; print(jax.ffi.include_dir())' 2>/dev/null)
    if [ -n "$inc" ] && ${NVCC:-nvcc} -arch=sm_90 -std=c++17 -O2 -shared -Xcompiler -fPIC \
        -I "$inc" -o "$ffi" $here/races_jax_ffi.cu >"$out/jax_ffi_build.log" 2>&1; then
        run jax_ffi_raced -- python3 $here/races_jax.py ffi "$ffi" raced
        raced jax_ffi_raced "a JAX custom call writing on its own stream, read by XLA's next kernel" \
            "race:   1st: launch#[0-9]+ kernel=side_scale\(float const\*, float\*, long\) parameter 1 \(writes: "
        run jax_ffi_fixed -- python3 $here/races_jax.py ffi "$ffi" fixed
        clean jax_ffi_fixed "the same custom call, XLA's stream waiting for its side stream"
    else
        fail "JAX custom call: could not build $ffi (see $out/jax_ffi_build.log)"
    fi
else
    echo "SKIP: jax not found"
fi

# ---- the cost on a GPT-2-like training step ----------------------------------------------
rounds=${RACES_BENCH_ROUNDS:-3}
if [ "$rounds" = 0 ]; then
    echo "SKIP: RACES_BENCH_ROUNDS=0: the cost on a GPT-2-like step"
    [ $status = 0 ] && echo "races-gpu-check: all passed" || echo "races-gpu-check: FAILED"
    exit $status
fi
step() { # CONFIG ENV...: one run, its ms per step appended to $out/gpt2.CONFIG
    cfg=$1
    shift
    if [ "$cfg" = native ]; then
        timeout 300 python3 bench/races/gpt2_step.py >"$out/gpt2.$cfg.out" 2>&1
    else
        timeout 300 env "$@" ATLAS_LOG="$out/gpt2.$cfg.log" LD_PRELOAD="$lib" \
            python3 bench/races/gpt2_step.py >"$out/gpt2.$cfg.out" 2>&1
    fi
    sed -n 's/^ms_per_step //p' "$out/gpt2.$cfg.out" >>"$out/gpt2.$cfg"
}
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r=0
while [ $r -lt "$rounds" ]; do
    step native
    step idle
    step races ATLAS_RACES=1
    step trace ATLAS_TRACE=1
    r=$((r + 1))
done
n=$(median "$out/gpt2.native") i=$(median "$out/gpt2.idle") rr=$(median "$out/gpt2.races") \
    tr=$(median "$out/gpt2.trace")
if [ -n "$n" ] && [ -n "$rr" ]; then
    echo "gpt2 step ($(sed -n 's/^model //p' "$out/gpt2.native.out"), 4 layers, width 256, batch 8x128, AdamW; median of $rounds interleaved runs): native $n ms, preload idle $i ms ($(awk -v a="$i" -v b="$n" 'BEGIN { printf "%.3fx", a / b }')), races $rr ms ($(awk -v a="$rr" -v b="$n" 'BEGIN { printf "%.3fx", a / b }')), step trace $tr ms ($(awk -v a="$tr" -v b="$n" 'BEGIN { printf "%.3fx", a / b }'))"
    echo "gpt2 runs (ms per step): native $(tr '\n' ' ' <"$out/gpt2.native")| idle $(tr '\n' ' ' <"$out/gpt2.idle")| races $(tr '\n' ' ' <"$out/gpt2.races")| trace $(tr '\n' ' ' <"$out/gpt2.trace")"
    if grep -q 'race: alloc#' "$out/gpt2.races.log"; then
        fail "gpt2: a race reported in the training step (log: $out/gpt2.races.log)"
    else
        pass "gpt2: no race reported ($(sed -n 's/.*races: \(.*\); \([0-9,]*\) accesses checked on \([0-9,]*\) streams.*/\1; \2 accesses, \3 streams/p' "$out/gpt2.races.log" | cut -c1-160))"
    fi
else
    fail "gpt2: the step did not run (see $out/gpt2.*.out)"
    tail -5 "$out/gpt2.native.out"
fi

[ $status = 0 ] && echo "races-gpu-check: all passed" || echo "races-gpu-check: FAILED"
exit $status
