#!/bin/sh
# Real-GPU suite of red zones (make redzone-gpu-check).
#   tests/gpu/redzone/run_redzone.sh BUILD_DIR
# Prints one PASS/FAIL line per check; exits non-zero if any failed. Logs
# are kept in BUILD_DIR/gpu-redzone/ for reading afterwards.
build=${1:-build}
here=tests/gpu/redzone
lib=$(realpath "$build/libatlastrace.so")
prog=$build/gpu/rz_overrun
out=$build/gpu-redzone
mkdir -p "$out"
rm -f "$out"/*.log
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }

# has NAME PATTERN WHAT: the log NAME contains a line matching PATTERN (grep -E)
has() {
    if grep -Eq -- "$2" "$out/$1.log"; then pass "$1: $3"; else fail "$1: $3 (no line matching '$2')"; fi
}
hasnt() {
    if grep -Eq -- "$2" "$out/$1.log"; then
        fail "$1: $3"
        grep -E -- "$2" "$out/$1.log" | head -5
    else
        pass "$1: $3"
    fi
}
atleast() {
    n=$(grep -Ec -- "$2" "$out/$1.log")
    if [ "$n" -ge "$3" ]; then pass "$1: $4 ($n)"; else fail "$1: $4 (found $n, want at least $3)"; fi
}
count() {
    n=$(grep -Ec -- "$2" "$out/$1.log")
    if [ "$n" -eq "$3" ]; then pass "$1: $4 ($n)"; else fail "$1: $4 (found $n, want $3)"; fi
}
# under NAME ENV... -- CMD...: runs CMD under the preload with ENV; stdout in $out/NAME.out
under() {
    name=$1
    shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs ATLAS_LOG="$out/$name.log" LD_PRELOAD="$lib" "$@" >"$out/$name.out" 2>"$out/$name.err"
    rc=$?
    touch "$out/$name.log"
    if [ $rc -ne 0 ]; then
        fail "$name: exit status $rc"
        tail -5 "$out/$name.err"
    else
        pass "$name: exit status 0"
    fi
}

# 1. 1000-byte buffer overrun by 8 bytes among 301 launches
"$prog" >"$out/native.out" 2>&1 || fail "rz_overrun without the preload failed"
bad=$(sed -n 's/^bad launch: //p' "$out/native.out")

under launch ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch ATLAS_LOG_LEVEL=info -- "$prog"
count launch "redzone overrun: alloc#[0-9]+ 1000 bytes at 0x[0-9a-f]+, allocated at .*: 8 bytes corrupted at \+1000\.\.\+1007$" 1 "one report: 1000 bytes, 8 bytes at +1000..+1007"
has launch "redzone: culprit: launch#$bad kernel=overrun_kernel\(unsigned char\*, int\) grid=\(4,1,1\) block=\(256,1,1\)" "culprit named exactly: launch#$bad overrun_kernel"
hasnt launch "scan kernel unavailable" "the GPU scan kernel was used (no copy fallback)"
has launch "redzone: check kernels loaded \(sm_90 build: each check is a dependent launch\)" "sm_90 and up: the checks are dependent launches"
hasnt launch "refused a dependent launch" "the driver took every dependent launch"
has launch "redzone: found by the check after launch#$bad on stream 0x[0-9a-f]+, which reached alloc#[0-9]+ through arg0\+0x0" "found by the launch's own check, through its first parameter"
atleast launch "redzone: alloc#[0-9]+ bytes=" 17 "each guarded allocation logged at info"
if cmp -s "$out/native.out" "$out/launch.out"; then pass "launch: program output unchanged"; else fail "launch: program output changed"; fi

under free ATLAS_REDZONE=256 -- "$prog"
count free "redzone overrun: alloc#[0-9]+ 1000 bytes .*: 8 bytes corrupted at \+1000\.\.\+1007" 1 "default mode: reported once"
has free "redzone: alloc#[0-9]+ found at cuMemFree_v2: written by one of the [0-9]+ launches since the last clean check" "default mode: found at the free, suspects counted"
has free "redzone: 1 overruns found in [0-9]+ guarded allocations" "final count"

under sync ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=sync -- "$prog"
has sync "found at cuCtxSynchronize|found at cuStreamSynchronize|found at cuCtxSynchronize_v2" "sync mode: found at the host sync"
count sync "redzone overrun:" 1 "sync mode: reported once"

under clean ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch -- "$prog" clean
hasnt clean "redzone overrun" "clean program, launch mode: no report"
has clean "redzone: 0 overruns found in [0-9]+ guarded allocations" "clean program: final count 0"

# 1b. At scale: 4 threads, 4 streams, 4,004 live allocations, 2,400 launches;
# one launch of thread 2 writes 8 bytes past its 1000-byte buffer
tprog=$build/gpu/rz_threads
under threads_launch ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch -- "$tprog"
count threads_launch "redzone overrun: alloc#[0-9]+ 1000 bytes at .*: 8 bytes corrupted at \+1000\.\.\+1007$" 1 "4 threads, launch mode: the one overrun reported once"
has threads_launch "redzone: culprit: launch#[0-9]+ kernel=tail_kernel\(unsigned char\*, int\) grid=\(4,1,1\) block=\(256,1,1\)" "4 threads, launch mode: the culprit named"
has threads_launch "redzone: 1 overruns found in 4004 guarded allocations" "4 threads, launch mode: every allocation guarded, one overrun"
under threads_free ATLAS_REDZONE=64 -- "$tprog"
count threads_free "redzone overrun: alloc#[0-9]+ 1000 bytes at .*: 8 bytes corrupted at \+1000\.\.\+1007$" 1 "4 threads, default mode: reported once, at its free"
has threads_free "redzone: 1 overruns found in 4004 guarded allocations" "4 threads, default mode: final count"
under threads_clean ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch -- "$tprog" clean
hasnt threads_clean "redzone overrun|alloc failed|free failed|unknown pointer|cannot check" "4 threads, clean, launch mode: no report"
has threads_clean "redzone: 0 overruns found in 4004 guarded allocations" "4 threads, clean: every allocation guarded"

# 2. PyTorch: a Triton kernel writes one element too many
under torch_overrun ATLAS_REDZONE=256 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 $here/rz_torch_overrun.py
count torch_overrun "redzone overrun: alloc#[0-9]+ 4096 bytes .*: 4 bytes corrupted at \+4096\.\.\+4099" 1 "Triton off-by-one reported: 4 bytes at +4096..+4099"

under torch_overrun_launch ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 $here/rz_torch_overrun.py
has torch_overrun_launch "redzone: culprit: launch#[0-9]+ kernel=off_by_one_kernel" "launch mode names the Triton kernel"

# 2b. The same with PyTorch's default allocator and no setting but ATLAS_REDZONE:
# the library routes the caching allocator to cudaMallocAsync at load
under torch_overrun_default ATLAS_REDZONE=256 ATLAS_LOG_LEVEL=info -- python3 $here/rz_torch_overrun.py
has torch_overrun_default "redzone: framework pools routed to one driver allocation per tensor: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync" "pools routed, said at info"
count torch_overrun_default "redzone overrun: alloc#[0-9]+ 4096 bytes .*: 4 bytes corrupted at \+4096\.\.\+4099" 1 "default allocator: Triton off-by-one reported"
has torch_overrun_default "redzone: [1-9][0-9]* frees on the legacy stream were held back and checked in [1-9][0-9]* batches" "default allocator: frees on PyTorch's default stream held back and checked in batches"

under torch_overrun_default_launch ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch -- python3 $here/rz_torch_overrun.py
has torch_overrun_default_launch "redzone: culprit: launch#[0-9]+ kernel=off_by_one_kernel" "default allocator, launch mode: the Triton kernel named"

under torch_overrun_keep ATLAS_REDZONE=256 ATLAS_REDZONE_POOLS=keep -- python3 $here/rz_torch_overrun.py
hasnt torch_overrun_keep "framework pools routed" "ATLAS_REDZONE_POOLS=keep: nothing routed"

# 3. PyTorch training steps with red zones on: no report at all
under torch_train ATLAS_REDZONE=256 -- python3 $here/rz_torch_train.py
hasnt torch_train "redzone overrun|alloc failed|free failed|unknown pointer" "training, default (routed) allocator: no report"
has torch_train "redzone: 0 overruns found in [1-9][0-9]* guarded allocations" "training, default (routed) allocator: zones were checked"

under torch_train_keep ATLAS_REDZONE=256 ATLAS_REDZONE_POOLS=keep -- python3 $here/rz_torch_train.py
hasnt torch_train_keep "redzone overrun|alloc failed|free failed|unknown pointer" "training, caching allocator kept: no report"
# (the caching allocator may hold few driver allocations, or none with
# expandable segments: the count only has to be there)
has torch_train_keep "redzone: 0 overruns found in [0-9]+ guarded allocations" "training, caching allocator kept: final count 0"

under torch_train_nocache ATLAS_REDZONE=256 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 $here/rz_torch_train.py
hasnt torch_train_nocache "redzone overrun|alloc failed|free failed|unknown pointer" "training, no caching: no report"
has torch_train_nocache "redzone: 0 overruns found in [1-9][0-9]* guarded allocations" "training, no caching: zones were checked"

under torch_train_launch ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch -- python3 $here/rz_torch_train.py
hasnt torch_train_launch "redzone overrun|alloc failed|free failed|unknown pointer|cannot check" "training, launch mode: no report"

under torch_train_sync ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=sync -- python3 $here/rz_torch_train.py
hasnt torch_train_sync "redzone overrun|alloc failed|free failed|unknown pointer|cannot check" "training, sync mode: no report"
has torch_train_sync "redzone: 0 overruns found in [1-9][0-9]* guarded allocations" "training, sync mode: zones were checked"

# 4. JAX: its pool routed to one driver allocation per buffer, a clean run
if python3 -c 'import jax' 2>/dev/null; then
    under jax_clean ATLAS_REDZONE=64 ATLAS_LOG_LEVEL=info -- python3 $here/rz_jax_overrun.py
    has jax_clean "framework pools routed .*XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async" "JAX's allocator routed, said at info"
    has jax_clean "redzone: 0 overruns found in [1-9][0-9]* guarded allocations" "JAX buffers guarded, nothing reported"
    under jax_clean_launch ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch -- python3 $here/rz_jax_overrun.py
    hasnt jax_clean_launch "redzone overrun|alloc failed|free failed|unknown pointer|cannot check" "JAX, launch mode: no report"
    # a custom call whose kernel writes one float past its output, in unmodified
    # JAX with no setting but ATLAS_REDZONE
    ffi=$build/gpu/rz_jax_ffi.so
    inc=$(python3 -c 'import jax.ffi; print(jax.ffi.include_dir())' 2>/dev/null)
    if [ -n "$inc" ] && ${NVCC:-nvcc} -arch=sm_90 -std=c++17 -O2 -shared -Xcompiler -fPIC \
        -I "$inc" -o "$ffi" $here/rz_jax_ffi.cu >"$out/jax_ffi_build.log" 2>&1; then
        under jax_ffi ATLAS_REDZONE=64 -- python3 $here/rz_jax_overrun.py ffi "$ffi"
        if grep -q '^ok: ffi' "$out/jax_ffi.out"; then pass "jax_ffi: the custom call ran"; else fail "jax_ffi: the custom call did not run"; fi
        count jax_ffi "redzone overrun: alloc#[0-9]+ 16384 bytes .*: 4 bytes corrupted at \+16384\.\.\+16387" 1 "JAX custom call writing past its output: reported once"
        under jax_ffi_launch ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch -- python3 $here/rz_jax_overrun.py ffi "$ffi"
        has jax_ffi_launch "redzone: culprit: launch#[0-9]+ kernel=past_end_kernel" "JAX custom call, launch mode: the kernel named"
        count jax_ffi_launch "redzone overrun: alloc#[0-9]+ 16384 bytes" 1 "JAX custom call, launch mode: reported once"
    else
        fail "JAX custom call: could not build $ffi (see $out/jax_ffi_build.log)"
    fi
fi

exit $status
