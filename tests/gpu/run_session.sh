#!/bin/sh
# Everything a change to hooks/ or src/ owes the GPU, in one call of a lent machine: the build,
# the real-GPU suites (three lanes side by side, as fast as they go: RZ_GPU_QUICK=1), then the
# real-program matrix in the time left. Each part writes its output to files under OUT as it
# goes, so a run stopped at its limit still leaves what it did.
#   tests/gpu/run_session.sh OUT [SECONDS]    (make gpu-session GPU_OUT=DIR GPU_SECONDS=570)
# SECONDS (default 570): when the matrix must end. SESSION_SUITES=0 skips the suites;
# MATRIX_ROWS and MATRIX_MODES choose the matrix's part (make gpu-matrix).
# Writes OUT/info.txt (the machine, the times), OUT/build.log, OUT/lane1.log .. lane3.log, and
# the matrix's OUT/matrix.log and OUT/m/ (matrix.txt, runs.txt, logs.txt); prints the suites'
# verdicts and the table at the end.
set -u
out=${1:?usage: run_session.sh OUT [SECONDS]}
budget=${2:-570}
mkdir -p "$out/m"
t0=$(date +%s)
since() { echo $(($(date +%s) - t0)); }
{
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv 2>&1
    echo "cores: $(nproc)"
    grep -m1 'model name' /proc/cpuinfo
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -n 1
    echo "cpu (/proc/stat) at start: $(head -n 1 /proc/stat)"
} >"$out/info.txt"
make -j"$(nproc)" all build/gpu/kern.cubin build/gpu/matrix_cudart build/gpu/matrix_driver \
    >"$out/build.log" 2>&1 || { echo "build failed:"; tail -n 30 "$out/build.log"; exit 1; }
echo "built after $(since) s" >>"$out/info.txt"
if [ "${SESSION_SUITES:-1}" != 0 ]; then
    lane() { # LOG SUITE...
        log=$1
        shift
        for s in "$@"; do
            RZ_GPU_QUICK=1 RACES_BENCH_ROUNDS=0 make --no-print-directory "$s-gpu-check"
            echo "== $s rc=$?"
        done >"$log" 2>&1
    }
    lane "$out/lane1.log" races core sync &
    lane "$out/lane2.log" trace reports front launch &
    lane "$out/lane3.log" redzone &
    wait
    echo "suites done after $(since) s" >>"$out/info.txt"
fi
left=$((budget - $(since)))
echo "matrix with $left s" >>"$out/info.txt"
if [ "$left" -gt 30 ]; then
    MATRIX_OUT=$out/m timeout "$left" make --no-print-directory gpu-matrix >"$out/matrix.log" 2>&1
    echo "matrix rc=$? after $(since) s" >>"$out/info.txt"
fi
echo "cpu (/proc/stat) at end: $(head -n 1 /proc/stat)" >>"$out/info.txt"
# the verdicts: each suite's PASS and FAIL lines, its exit status
for f in "$out"/lane*.log; do
    [ -f "$f" ] || continue
    awk '/PASS/ { p++ } /FAIL/ { f++ } /^== [a-z]+ rc=/ { print $2, $3, "PASS lines " p + 0, "FAIL lines " f + 0; p = 0; f = 0 }' "$f"
    grep -h '^FAIL' "$f"
done
cat "$out/m/matrix.txt" 2>/dev/null
cat "$out/info.txt"
