#!/bin/sh
# Real-GPU suite of syncs, copies and faults (make sync-gpu-check).
#   tests/gpu/sync/run_sync.sh BUILD_DIR
build=${1:-build}
here=tests/gpu/sync
lib=$(realpath "$build/libatlastrace.so")
out=$build/gpu-sync
mkdir -p "$out"
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }
has() { grep -q -- "$2" "$1"; }

# 1. debug sync names the out-of-bounds kernel, and the launch returns the error
ATLAS_DEBUG_SYNC_KERNELS=1 ATLAS_LOG="$out/oob-debug.log" LD_PRELOAD="$lib" \
    "$build/gpu/sync_oob" >"$out/oob-debug.out" 2>&1
cat "$out/oob-debug.out"
grep -E "debug-sync|fault" "$out/oob-debug.log" | head -8
if has "$out/oob-debug.log" "debug-sync: launch failed: kernel=oob_kernel(" &&
   has "$out/oob-debug.log" "code=700" &&
   [ "$(grep -c 'debug-sync: launch failed' "$out/oob-debug.log")" = 1 ]; then
    pass "ATLAS_DEBUG_SYNC_KERNELS=1 names oob_kernel, once, with error 700"
else
    fail "debug sync did not name oob_kernel (log: $out/oob-debug.log)"
fi
if has "$out/oob-debug.out" "first failing launch: 500 (cudaErrorIllegalAddress)"; then
    pass "the faulting launch itself (500) returned the error to the program"
else
    fail "the program did not see the error at launch 500"
fi

# 2. without debug sync: the latch, once, with the recent launches
ATLAS_LOG="$out/oob-latch.log" LD_PRELOAD="$lib" "$build/gpu/sync_oob" >"$out/oob-latch.out" 2>&1
cat "$out/oob-latch.out"
grep -E "fault" "$out/oob-latch.log" | head -24
if [ "$(grep -c 'fault: error=' "$out/oob-latch.log")" = 1 ] &&
   has "$out/oob-latch.log" "fault: error=CUDA_ERROR_ILLEGAL_ADDRESS code=700" &&
   has "$out/oob-latch.log" "fault:   launch=.* kernel=oob_kernel(float\*, long) grid=(1,1,1) block=(32,1,1)"; then
    pass "fault latch reported once, oob_kernel among the recent launches"
else
    fail "fault latch (log: $out/oob-latch.log)"
fi
# (a launch after the faulting one may already see the error: the GPU runs ahead)
if has "$out/oob-latch.out" "sync returned: cudaErrorIllegalAddress" &&
   has "$out/oob-latch.out" "memcpy returned: cudaErrorIllegalAddress"; then
    pass "without debug sync the program sees the driver's own errors"
else
    fail "results changed without debug sync"
fi
# native run, for the cost of debug sync per launch
"$build/gpu/sync_oob" >"$out/oob-native.out" 2>&1
echo "debug-sync cost: native $(grep 'good launches' "$out/oob-native.out"), preloaded $(grep 'good launches' "$out/oob-latch.out"), debug sync $(grep 'good launches' "$out/oob-debug.out")"

# 3. the flight recorder: bad_kernel 300 launches before the sync is named
# first among the suspects, with no setting
"$build/gpu/flight" plain >"$out/flight-native.out" 2>&1
ATLAS_LOG="$out/flight.log" LD_PRELOAD="$lib" "$build/gpu/flight" plain >"$out/flight.out" 2>&1
cat "$out/flight.out"
grep -E "fault: [0-9]+ suspect|rare suspect|args|re-run|wrapped|streams" "$out/flight.log"
if has "$out/flight.log" "by kernel, rarest first: bad_kernel x1, good x600" &&
   has "$out/flight.log" "fault:   rare suspect x1, newest: launch=.* kernel=bad_kernel(float\*, long)" &&
   has "$out/flight.log" "ATLAS_DEBUG_SYNC_KERNELS=bad_kernel "; then
    pass "the suspects name bad_kernel x1 first, 300 launches before the sync, and the hint names it"
else
    fail "the suspects do not name bad_kernel x1 first (log: $out/flight.log)"
fi
# the hint runs as printed: pasted into sh, it names the faulting launch; from this bare
# preload (its ATLAS_LOG among the settings: the re-run appends to the same log) and through
# atlas-trace (the re-run is atlas-trace's command line with --debug-sync=bad_kernel)
hint() { sed -n 's/^atlas\[[0-9]*\]: fault: re-run with debug sync[^)]*): //p' "$1" | head -n 1; }
cmd=$(hint "$out/flight.log")
n=$(wc -l <"$out/flight.log")
sh -c "$cmd" >"$out/flight-paste.out" 2>&1
if tail -n +"$((n + 1))" "$out/flight.log" | grep -q "debug-sync: launch failed: kernel=bad_kernel"; then
    pass "the bare preload's hint, pasted ($cmd), names bad_kernel's launch"
else
    fail "the bare preload's hint, pasted ($cmd), did not name bad_kernel (log: $out/flight.log)"
fi
"$build/atlas-trace" "$build/gpu/flight" plain >"$out/flight-tool.out" 2>&1
cmd=$(hint "$out/flight-tool.out")
sh -c "$cmd" >"$out/flight-tool-paste.out" 2>&1
if [ "$cmd" = "$build/atlas-trace --debug-sync=bad_kernel $build/gpu/flight plain" ] &&
   has "$out/flight-tool-paste.out" "debug-sync: launch failed: kernel=bad_kernel"; then
    pass "through atlas-trace the hint is '$cmd'; pasted, it names bad_kernel's launch"
else
    fail "through atlas-trace the hint is '$cmd' (output: $out/flight-tool-paste.out)"
fi
# a captured graph: its kernel nodes are listed
ATLAS_LOG="$out/flight-graph.log" LD_PRELOAD="$lib" "$build/gpu/flight" graph >"$out/flight-graph.out" 2>&1
cat "$out/flight-graph.out"
grep -E "fault: [0-9]+ suspect|graph|node" "$out/flight-graph.log" | head -20
if has "$out/flight-graph.log" "rarest first: graph@" &&
   has "$out/flight-graph.log" "node kernel=bad_kernel(float\*, long) grid=(1,1,1) block=(32,1,1)"; then
    pass "a fault in a captured graph lists the graph's kernel nodes, bad_kernel among them"
else
    fail "the graph's kernel nodes are not listed (log: $out/flight-graph.log)"
fi
# the hint's setting names the faulting launch, at close to native speed
ATLAS_DEBUG_SYNC_KERNELS=bad_kernel ATLAS_LOG="$out/flight-dsk.log" LD_PRELOAD="$lib" \
    "$build/gpu/flight" plain >"$out/flight-dsk.out" 2>&1
cat "$out/flight-dsk.out"
if has "$out/flight-dsk.log" "debug-sync: launch failed: kernel=bad_kernel(float\*, long)" &&
   has "$out/flight-dsk.out" "first failing launch: 300 (cudaErrorIllegalAddress)"; then
    pass "ATLAS_DEBUG_SYNC_KERNELS=bad_kernel names the faulting launch (300), which returns 700"
else
    fail "ATLAS_DEBUG_SYNC_KERNELS=bad_kernel (log: $out/flight-dsk.log)"
fi
# its cost (bench/RESULTS.md): per good launch, 20,000 of them, against native and =1
us() { sed -n 's/^good launches before bad_kernel: \([0-9.]*\) us.*/\1/p' "$1"; }
"$build/gpu/flight" plain 20000 10 >"$out/t-native.out" 2>&1
LD_PRELOAD="$lib" "$build/gpu/flight" plain 20000 10 >"$out/t-ring.out" 2>/dev/null
ATLAS_DEBUG_SYNC_KERNELS=bad_kernel LD_PRELOAD="$lib" "$build/gpu/flight" plain 20000 10 \
    >"$out/t-dsk.out" 2>/dev/null
ATLAS_DEBUG_SYNC_KERNELS=1 LD_PRELOAD="$lib" "$build/gpu/flight" plain 20000 10 \
    >"$out/t-all.out" 2>/dev/null
n=$(us "$out/t-native.out") r=$(us "$out/t-ring.out") d=$(us "$out/t-dsk.out") a=$(us "$out/t-all.out")
awk -v n="$n" -v r="$r" -v d="$d" -v a="$a" 'BEGIN {
    printf "flight timing (us per good launch, 20,000 launches): native %s, preloaded %s (%.3fx), ", n, r, r / n
    printf "ATLAS_DEBUG_SYNC_KERNELS=bad_kernel %s (%.3fx), ATLAS_DEBUG_SYNC_KERNELS=1 %s (%.2fx)\n", d, d / n, a, a / n }'

# 4. PyTorch: counts match the script's structure, sites name libtorch
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    ATLAS_D2H_TRACE=1000000000 ATLAS_LOG="$out/torch.log" LD_PRELOAD="$lib" \
        python3 $here/torch_d2h.py >"$out/torch.out" 2>&1
    rc=$?
    cat "$out/torch.out"
    [ $rc -eq 0 ] || fail "torch_d2h.py exited $rc"
    grep "d2h-summary" "$out/torch.log" | head -40
    if grep -q "d2h-summary: site=1 .*libtorch" "$out/torch.log" &&
       grep -q "d2h-summary: site=.*(pageable: hidden sync) at .*libtorch" "$out/torch.log"; then
        pass "summary sites name PyTorch's library frames (libtorch), pageable ones marked"
    else
        fail "summary sites do not name libtorch frames (log: $out/torch.log)"
    fi
else
    fail "no PyTorch with CUDA here"
fi
exit $status
