#!/bin/sh
# The real-program matrix (make gpu-matrix, issue #43): each program under each mode, as a user
# runs it (through atlas-trace with the first option they would type), against the same
# program natively, on a GPU.
#   tests/gpu/matrix/run_matrix.sh BUILD_DIR
# Rows: Hugging Face GPT-2 training, timm ResNet training, torch.compile(mode="reduce-overhead"),
# DDP over NCCL with one rank, Flax/Optax under jax.jit, CuPy, an nvcc program (static cudart),
# a driver-API program. Columns: idle (atlas-trace, no option), --trace, --redzone=256,
# --redzone=256 --redzone-check=launch, --d2h, --leaks, --races. A cell is the median step time
# against native's (each the median of MATRIX_ROUNDS runs, 3 by default, run in interleaved
# rounds), the lines atlastrace printed (the first round's run), and PASS or FAIL against the
# mode's bar; ERR when a run failed or ran past MATRIX_TIMEOUT seconds (default 150). Exits 1
# on any FAIL or ERR.
#
# Three processes run at once (MATRIX_JOBS): their imports overlap; from its first use of the
# GPU to its end each holds the lock file MATRIX_LOCK, so no two use the GPU at once, and runs on
# half of the cores (MATRIX_CPUS), the processes still importing on the other half
# (MATRIX_IMPORT_CPUS; programs.py, timed.h).
# MATRIX_ROWS and MATRIX_MODES choose a part; MATRIX_OUT, a folder: the table (matrix.txt), the
# runs' figures (runs.txt) and the first lines of every log (logs.txt) are written there as
# they come.
set -u
if [ "${1:-}" = --one ]; then
    # one run: --one BUILD ROW MODE ROUND (the runs' folder in MATRIX_TMP)
    build=$2 row=$3 mode=$4 round=$5 tmp=$MATRIX_TMP
    here=tests/gpu/matrix
    case $row in
    cudart) set -- "$build/gpu/matrix_cudart" ;;
    driver) set -- "$build/gpu/matrix_driver" "$build/gpu/kern.cubin" ;;
    *) set -- python3 "$here/programs.py" "$row" ;;
    esac
    log=$tmp/$row.$mode.$round.log
    out=$tmp/$row.$mode.$round.out
    case $mode in
    native) opts= ;;
    idle) opts=" " ;;
    trace) opts="--trace" ;;
    rz) opts="--redzone=256" ;;
    rzl) opts="--redzone=256 --redzone-check=launch" ;;
    d2h) opts="--d2h" ;;
    leaks) opts="--leaks" ;;
    races) opts="--races" ;;
    esac
    t0=$(date +%s.%N)
    if [ -z "$opts" ]; then
        timeout "${MATRIX_TIMEOUT:-150}" "$@" >"$out" 2>"$log"
    else
        # shellcheck disable=SC2086
        timeout "${MATRIX_TIMEOUT:-150}" "$build/atlas-trace" $opts -o "$log" -- "$@" >"$out" 2>"$out.err"
    fi
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    ms=$(awk '/^ms_per_step/ { print $2 }' "$out")
    if [ $rc -ne 0 ] || [ -z "$ms" ]; then
        echo "ERR rc=$rc $(tail -n 2 "$out.err" "$log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)" >"$tmp/$row.$mode.$round.ms"
    else
        echo "$ms" >"$tmp/$row.$mode.$round.ms"
    fi
    echo "$row $mode round $round: rc=$rc ms_per_step=${ms:--} ${secs}s" >>"$tmp/runs.txt"
    exit 0
fi

build=${1:-build}
rows=${MATRIX_ROWS:-gpt2 resnet compile ddp flax cupy cudart driver}
modes=${MATRIX_MODES:-idle trace rz rzl d2h leaks races}
rounds=${MATRIX_ROUNDS:-3}
jobs=${MATRIX_JOBS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MATRIX_LOCK=$tmp/lock
# the process that holds the lock on cores of its own, the ones importing on the rest
ncpu=$(nproc 2>/dev/null || echo 1)
if [ "$ncpu" -ge 8 ]; then
    export MATRIX_CPUS="${MATRIX_CPUS:-0-$((ncpu / 2 - 1))}"
    export MATRIX_IMPORT_CPUS="${MATRIX_IMPORT_CPUS:-$((ncpu / 2))-$((ncpu - 1))}"
fi
# JAX takes 75% of the GPU's memory at start unless told not to: three processes at once
export XLA_PYTHON_CLIENT_PREALLOCATE=false
out=${MATRIX_OUT:-}
[ -n "$out" ] && mkdir -p "$out"
start=$(date +%s)

bar() { # MODE -> its bar (issue #43; red zones': issue #45)
    case $1 in
    idle) echo 1.02 ;; trace) echo 1.10 ;; rz) echo 1.35 ;; rzl) echo 1.50 ;;
    d2h | leaks) echo 1.05 ;; races) echo 1.25 ;;
    esac
}
label() {
    case $1 in
    idle) echo idle ;; trace) echo --trace ;; rz) echo --redzone ;; rzl) echo "rz launch" ;;
    d2h) echo --d2h ;; leaks) echo --leaks ;; races) echo --races ;;
    esac
}

# the jobs: for each row, rounds of native and every mode, interleaved; each round starts one
# configuration later than the one before (round 1: native, idle, trace, ...; round 2: idle,
# trace, ..., native), so that no configuration always runs at the same place in a round
# (section 16 of bench/RESULTS.md: resnet's idle runs, always second, were all three slower
# than all three of native's and of the trace's)
: >"$tmp/jobs"
: >"$tmp/runs.txt"
for row in $rows; do
    r=1
    while [ $r -le "$rounds" ]; do
        set -- native $modes
        k=1
        while [ $k -lt $r ] && [ $# -gt 1 ]; do
            first=$1
            shift
            set -- "$@" "$first"
            k=$((k + 1))
        done
        for m in "$@"; do echo "$row $m $r" >>"$tmp/jobs"; done
        r=$((r + 1))
    done
done
echo "== gpu-matrix: $(wc -l <"$tmp/jobs") runs ($rounds rounds of native and $(echo $modes | wc -w) modes for each of: $rows), $jobs at a time"
export MATRIX_TMP=$tmp
med() { # FILES... -> the median of the numbers in them ("" when any run failed)
    cat "$@" 2>/dev/null | grep -q '^ERR' && return 0
    cat "$@" 2>/dev/null | grep -E '^[0-9.]+$' | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
status=0
table=$tmp/matrix.txt
{
    printf '%-8s %9s' program "native ms"
    for m in $modes; do printf ' | %-20s' "$(label $m) (<=$(bar $m)x)"; done
    echo
} >"$table"
# each row's runs finish before the next row's start, so a row's figures come in as it ends
for row in $rows; do
    grep "^$row " "$tmp/jobs" | xargs -P "$jobs" -L 1 sh "$0" --one "$build"
    n=$(med "$tmp/$row.native."*.ms)
    line=$(printf '%-8s %9s' "$row" "${n:-ERR}")
    for m in $modes; do
        t=$(med "$tmp/$row.$m."*.ms)
        lines=$(grep -c '' "$tmp/$row.$m.1.log" 2>/dev/null || echo 0)
        if [ -z "$n" ] || [ -z "$t" ]; then
            cell="ERR ${lines}L"
            status=1
        else
            x=$(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.2f", t / n }')
            if awk -v x="$x" -v b="$(bar $m)" 'BEGIN { exit !(x <= b) }'; then v=PASS; else v=FAIL status=1; fi
            cell="${x}x ${lines}L $v"
        fi
        line="$line$(printf ' | %-20s' "$cell")"
    done
    echo "$line" >>"$table"
    echo "  $row: done after $(($(date +%s) - start)) s"
    if [ -n "$out" ]; then
        cp "$tmp/runs.txt" "$out/runs.txt"
        cp "$table" "$out/matrix.txt"
        for f in "$tmp/$row".*.1.log; do
            [ -f "$f" ] || continue
            echo "==== $(basename "$f") ($(grep -c '' "$f") lines)"
            head -n 40 "$f"
        done >>"$out/logs.txt"
        for f in "$tmp/$row".*.ms; do
            grep -q '^ERR' "$f" && echo "==== $(basename "$f"): $(cat "$f")"
        done >>"$out/logs.txt" 2>/dev/null
    fi
done
echo "== gpu-matrix: step time against native (median of $rounds interleaved runs), lines atlastrace printed, the mode's bar; $(($(date +%s) - start)) s"
cat "$table"
[ -n "$out" ] && cp "$table" "$out/matrix.txt"
[ $status -eq 0 ] && echo "gpu-matrix: PASS" || echo "gpu-matrix: FAIL"
exit $status
