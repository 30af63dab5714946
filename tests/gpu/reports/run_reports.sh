#!/bin/sh
# Real-GPU checks of the reports (make reports-gpu-check; docs/reports.md):
#   tests/gpu/reports/run_reports.sh BUILD_DIR
# 1. an nvcc program built with -g -lineinfo and nvcc's default static cudart
#    (tests/gpu/redzone/rz_overrun.cu): the overrun's allocation named by the cudaMalloc's file
#    and line, not by CUDA's runtime linked into the program, where libdw.so.1 is installed or
#    an addr2line program (binutils, which the CUDA toolkit brings) is on PATH (by symbol+offset
#    of main where neither is); launch mode names the kernel; the findings file
#    validates, its printed lines are stderr's, and its overrun's frames hold that file:line;
# 2. PyTorch: the findings file of a run with a Triton off-by-one (the default caching
#    allocator: the stray element in a segment's red zone) and of a race on two streams
#    validates, matches stderr, and --error-exitcode's count is its unsuppressed lines; the
#    entry --gen-suppressions printed, pasted into a file, leaves the overrun out on a re-run.
build=${1:-build}
tool=$build/atlas-trace
out=$build/gpu-reports
here=$(dirname "$0")
mkdir -p "$out"
status=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; status=1; }
check() { python3 "$here/check_findings.py" "$@"; }

libdw=no
for f in /usr/lib/*/libdw.so.1 /usr/lib64/libdw.so.1; do [ -e "$f" ] && libdw=yes; done
a2l=no
command -v addr2line >/dev/null 2>&1 || command -v llvm-addr2line >/dev/null 2>&1 && a2l=yes
lines=no
[ $libdw = yes ] || [ $a2l = yes ] && lines=yes
echo "== libdw.so.1 installed: $libdw; an addr2line program on PATH: $a2l"

echo "== an nvcc -g -lineinfo program (static cudart)"
prog=$build/gpu/rz_overrun_g
line=$(grep -n 'CK(cudaMalloc(&small, 1000));' tests/gpu/redzone/rz_overrun.cu | cut -d: -f1)
"$tool" --redzone=256 --redzone-check=launch --error-exitcode=3 --report="$out/nvcc.jsonl" \
    "$prog" >"$out/nvcc.out" 2>"$out/nvcc.err"
rc=$?
[ "$rc" -eq 3 ] && pass "nvcc: exit status 3 (the overrun)" || fail "nvcc: exit $rc"
if [ $lines = yes ] && grep -q "allocated at main (rz_overrun.cu:$line): 8 bytes corrupted" "$out/nvcc.err"; then
    pass "nvcc: the allocation named by its line, rz_overrun.cu:$line (libdw $libdw, addr2line $a2l)"
elif [ $lines = no ] && grep -q "allocated at main+0x[0-9a-f]* (rz_overrun_g): 8 bytes" "$out/nvcc.err"; then
    pass "nvcc: neither libdw.so.1 nor addr2line: the allocation named by main+offset"
else
    fail "nvcc: allocation site (want rz_overrun.cu:$line, libdw $libdw, addr2line $a2l)"; grep overrun "$out/nvcc.err"
fi
# and with libdw hidden (a libdw.so.1 that is no libdw first on the library path): the line
# from addr2line, as on an image without elfutils
if [ $a2l = yes ]; then
    mkdir -p "$out/nodw" && cc -shared -o "$out/nodw/libdw.so.1" -x c /dev/null 2>/dev/null
    LD_LIBRARY_PATH="$out/nodw${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tool" --redzone=256 \
        "$prog" >"$out/nvcc-nodw.out" 2>"$out/nvcc-nodw.err"
    grep -q "allocated at main (rz_overrun.cu:$line): 8 bytes corrupted" "$out/nvcc-nodw.err" &&
        pass "nvcc: libdw hidden: the allocation named by its line from addr2line" ||
        { fail "nvcc: libdw hidden: no rz_overrun.cu:$line"; grep overrun "$out/nvcc-nodw.err"; }
fi
grep -q "libcudart_static_\|__device_stub" "$out/nvcc.err" && fail "nvcc: a frame of CUDA's runtime named as a site" ||
    pass "nvcc: no frame of the static runtime named"
grep -Eq "redzone: culprit: launch#[0-9]+ kernel=overrun_kernel\(unsigned char\*, int\)" "$out/nvcc.err" &&
    pass "nvcc: launch mode names the kernel" || fail "nvcc: no culprit"
frame=""
[ $lines = yes ] && frame="--frame rz_overrun.cu:$line"
# shellcheck disable=SC2086
check "$out/nvcc.jsonl" "$out/nvcc.err" overrun=1 --verdict 1 $frame &&
    pass "nvcc: the findings file validates and matches stderr" || fail "nvcc: findings file"

if python3 -c 'import torch, triton; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== PyTorch + Triton: an overrun (default allocator)"
    "$tool" --redzone=256 --error-exitcode=3 --gen-suppressions --report="$out/torch.jsonl" \
        python3 tests/gpu/redzone/rz_torch_overrun.py big >"$out/torch.out" 2>"$out/torch.err"
    rc=$?
    [ "$rc" -eq 3 ] && grep -q "reported 1 overrun: exit status 3" "$out/torch.err" &&
        pass "torch: exit status 3, one overrun reported" || fail "torch: exit $rc"
    check "$out/torch.jsonl" "$out/torch.err" overrun=1 --verdict 1 &&
        pass "torch: the findings file validates and matches stderr" || fail "torch: findings file"
    tail -n 1 "$out/torch.err" | grep -q "]: summary: 1 overrun in " &&
        pass "torch: the summary line last" || fail "torch: last line: $(tail -n 1 "$out/torch.err")"
    # the entry --gen-suppressions printed after the overrun, pasted as printed
    sed -n '/]: {$/,/]: }$/p' "$out/torch.err" >"$out/torch.supp"
    [ -s "$out/torch.supp" ] && pass "torch: --gen-suppressions printed an entry" ||
        fail "torch: no suppression entry printed"
    "$tool" --redzone=256 --error-exitcode=3 --suppressions="$out/torch.supp" \
        --report="$out/torch-supp.jsonl" python3 tests/gpu/redzone/rz_torch_overrun.py big \
        >/dev/null 2>"$out/torch-supp.err"
    rc=$?
    [ "$rc" -eq 0 ] && ! grep -q "redzone overrun" "$out/torch-supp.err" &&
        grep -q "suppressed: 1 finding (1 overrun)" "$out/torch-supp.err" &&
        grep -q '"suppressed":true' "$out/torch-supp.jsonl" &&
        tail -n 1 "$out/torch-supp.err" | grep -q ", 1 finding suppressed$" &&
        pass "torch: suppressed: not printed, not counted, marked in the file, said in the summary" ||
        fail "torch: with the suppression: exit $rc"

    echo "== PyTorch: a race between two streams"
    "$tool" --races --error-exitcode=3 --report="$out/race.jsonl" \
        python3 tests/gpu/races/races_torch.py side raced >"$out/race.out" 2>"$out/race.err"
    rc=$?
    [ "$rc" -eq 3 ] && pass "torch race: exit status 3" || fail "torch race: exit $rc"
    n=$(grep -c '"kind":"race"' "$out/race.jsonl")
    check "$out/race.jsonl" "$out/race.err" race="$n" --verdict "$n" && [ "$n" -ge 1 ] &&
        pass "torch race: $n race(s) in the findings file, as stderr and the verdict say" ||
        fail "torch race: findings file"
else
    echo "SKIP: PyTorch with Triton and a GPU not found"
fi

[ $status -eq 0 ] && echo "reports-gpu-check: PASS" || echo "reports-gpu-check: FAIL"
exit $status
