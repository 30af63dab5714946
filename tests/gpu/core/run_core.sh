#!/bin/sh
# Real-GPU suite of the interposer core (make core-gpu-check).
#   tests/gpu/core/run_core.sh BUILD_DIR
# Each target runs without and with the preload (ATLAS_STATS=1): its stdout
# must be byte-identical, and every launch, copy and sync it is known to make
# must be counted.
build=${1:-build}
here=tests/gpu/core
lib=$(realpath "$build/libatlastrace.so")
out=$build/gpu-core
mkdir -p "$out"
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }

# run NAME CMD...: native and preloaded runs; outputs in $out/NAME.*
run() {
    name=$1
    shift
    "$@" >"$out/$name.native" 2>"$out/$name.native.err"
    rn=$?
    ATLAS_STATS=1 ATLAS_LOG="$out/$name.log" LD_PRELOAD="$lib" "$@" >"$out/$name.pre" 2>"$out/$name.pre.err"
    rp=$?
    if [ $rn -ne 0 ] || [ $rp -ne 0 ]; then
        fail "$name: exit status native=$rn preloaded=$rp"
        tail -5 "$out/$name.native.err" "$out/$name.pre.err"
        return 1
    fi
    if cmp -s "$out/$name.native" "$out/$name.pre"; then
        pass "$name: output byte-identical with and without the preload ($(wc -l <"$out/$name.pre") lines)"
    else
        fail "$name: output differs under the preload"
        diff "$out/$name.native" "$out/$name.pre" | head -10
    fi
}

check() {
    name=$1
    shift
    if python3 $here/check_stats.py hooks/hooks.def "$out/$name.log" "$@"; then
        pass "$name: counts"
    else
        fail "$name: counts"
    fi
}

echo "== driver API program (linked -lcuda)"
if run driver "$build/gpu/gpu_driver" "$build/gpu/kern.cubin"; then
    check driver exact cuLaunchKernel=1000 cuMemAlloc_v2=2 cuMemFree_v2=2 cuMemcpyHtoD_v2=1 \
        cuMemcpyDtoH_v2=2 cuMemcpyDtoHAsync_v2=1 cuMemsetD32_v2=1 cuStreamSynchronize=1 \
        cuCtxSynchronize=2 cuModuleLoad=1 cuModuleGetFunction=1 cuModuleUnload=1
fi

echo "== module reload loop on the real driver (issue #28): 20,000 cycles"
if run reload "$build/gpu/gpu_reload" "$build/gpu/kern.cubin" 20000; then
    check reload exact cuLaunchKernel=20000 cuModuleLoad=20000 cuModuleUnload=20000
    # time linear and memory flat: the last 2,000 cycles within 3x the CPU
    # time of cycles 500-2,499, the heap within 256 KiB of the native growth
    awk '
        FILENAME ~ /native/ { n[$1] = $2; next }
        { p[$1] = $2 }
        END {
            grew = p["heap_last"] - p["heap_first"]; ngrew = n["heap_last"] - n["heap_first"]
            printf "reload: cycles 500-2,499 %d us, last 2,000 %d us (native %d, %d); heap +%d (native +%d)\n", \
                p["first_us"], p["last_us"], n["first_us"], n["last_us"], grew, ngrew
            exit !(p["last_us"] <= 3 * p["first_us"] + 20000 && grew <= ngrew + 262144)
        }' "$out/reload.native.err" "$out/reload.pre.err" &&
        pass "reload: time linear, memory flat" || fail "reload: time or memory grows with the cycles"
    # the kernel audit of a program that unloaded its modules (#27)
    ATLAS_KERNEL_AUDIT=1 ATLAS_LOG="$out/reload-audit.log" LD_PRELOAD="$lib" \
        "$build/gpu/gpu_reload" "$build/gpu/kern.cubin" 4500 >/dev/null 2>&1
    # one row per module handle the driver gave: their launches add up
    launched=$(awk '/kernel-audit: resolved=yes .*kernel=scale/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^launches=/) { sub("launches=", "", $i); n += $i }
        } END { print n + 0 }' "$out/reload-audit.log")
    if [ "$launched" = 4500 ]; then
        pass "reload: the audit counts the launches of unloaded modules"
    else
        fail "reload: the audit counted $launched launches of 4500"
        grep "kernel-audit" "$out/reload-audit.log" | head -3
    fi
    # the step trace across unloads: each cycle's step compared with the
    # last, whose module is gone (kept steps hold their kernels' records),
    # the module unloaded after the sync and before it (the op waits in its
    # buffer): every step compared, identical, the heap as flat as natively
    for how in after before; do
        ATLAS_TRACE=1 ATLAS_LOG="$out/reload-trace-$how.log" LD_PRELOAD="$lib" \
            "$build/gpu/gpu_reload" "$build/gpu/kern.cubin" 4500 $how \
            >"$out/reload-trace-$how.out" 2>"$out/reload-trace-$how.err"
        rc=$?
        grew=$(awk '{ v[$1] = $2 } END { print v["heap_last"] - v["heap_first"] }' \
            "$out/reload-trace-$how.err")
        ngrew=$(awk '{ v[$1] = $2 } END { print v["heap_last"] - v["heap_first"] }' \
            "$out/reload.native.err")
        if [ $rc -eq 0 ] && grep -q "trace summary: steps=4500 compared=4499 identical=4499 differing=0" \
            "$out/reload-trace-$how.log" && [ "$grew" -le $((ngrew + 262144)) ]; then
            pass "reload: the step trace, module unloaded $how the sync (heap +$grew, native +$ngrew)"
        else
            fail "reload: the step trace, module unloaded $how the sync: exit $rc, heap +$grew (native +$ngrew)"
            grep "trace summary" "$out/reload-trace-$how.log" | head -2
        fi
    done
fi

for kind in static shared; do
    echo "== nvcc program, $kind cudart"
    if run cudart_$kind "$build/gpu/gpu_cudart_$kind"; then
        check cudart_$kind class launch=500 copy=">=2" memset=">=1" sync=">=2"
    fi
done

echo "== PyTorch: eager steps and a CUDA graph"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    if run torch python3 $here/gpu_torch.py "$out/torch.truth.json"; then
        # the truth file of the preloaded run is the one to compare with
        ATLAS_STATS=1 ATLAS_LOG="$out/torch2.log" LD_PRELOAD="$lib" \
            python3 $here/gpu_torch.py "$out/torch.truth.json" >/dev/null 2>&1
        check torch2 torch "$out/torch.truth.json"
    fi
else
    fail "torch: PyTorch with CUDA is not available here"
fi

[ $status -eq 0 ] && echo "core-gpu-check: PASS" || echo "core-gpu-check: FAIL"
exit $status
