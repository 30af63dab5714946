#!/bin/sh
# The real-program matrix (make gpu-matrix, issue #43): each program under each mode, as a user
# runs it (through atlas-trace with the first option they would type), against the same
# program natively, on a GPU.
#   tests/gpu/matrix/run_matrix.sh BUILD_DIR
# Rows: Hugging Face GPT-2 training, timm ResNet training, torch.compile(mode="reduce-overhead"),
# DDP over NCCL with one rank, Flax/Optax under jax.jit, CuPy, an nvcc program (static cudart),
# a driver-API program. Columns: idle (atlas-trace, no option), --trace, --redzone=256,
# --redzone=256 --redzone-check=launch, --d2h, --leaks, --races.
#
# A row runs as a group: one process natively and one under each mode, started together, which
# take turns on the GPU once all are warm (programs.py and timed.h say how and why): block k of
# each in turn, MATRIX_BLOCKS blocks (15 unless set). A cell is the median over k of the mode's
# block k against native's block k (MATRIX_ROUNDS groups, 1 unless set, pooled; each round
# starts its turns one process later), the lines atlastrace printed (the first round's run), and
# PASS or FAIL against the mode's bar; ERR when a run failed or ran past MATRIX_TIMEOUT seconds
# (default 600). Exits 1 on any FAIL or ERR. runs.txt has each run's blocks, and each cell's
# quartiles of the block ratios.
#
# MATRIX_ROWS and MATRIX_MODES choose a part; MATRIX_OUT, a folder: the table (matrix.txt), the
# runs' figures (runs.txt) and the first lines of every log (logs.txt) are written there as
# they come.
set -u
if [ "${1:-}" = --one ]; then
    # one run: --one BUILD ROW MODE ROUND INDEX N (the runs' folder in MATRIX_TMP)
    build=$2 row=$3 mode=$4 round=$5 tmp=$MATRIX_TMP
    export MATRIX_I=$6 MATRIX_N=$7 MATRIX_TURNS=$tmp/turns.$row.$round
    mkdir -p "$MATRIX_TURNS"
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
        timeout "${MATRIX_TIMEOUT:-600}" "$@" >"$out" 2>"$log"
    else
        # shellcheck disable=SC2086
        timeout "${MATRIX_TIMEOUT:-600}" "$build/atlas-trace" $opts -o "$log" -- "$@" >"$out" 2>"$out.err"
    fi
    rc=$?
    touch "$MATRIX_TURNS/dead.$MATRIX_I" # its turns, if any are left, pass
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    ms=$(awk '/^ms_per_step/ { print $2 }' "$out")
    if [ $rc -ne 0 ] || [ -z "$ms" ]; then
        echo "ERR rc=$rc $(tail -n 2 "$out.err" "$log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)" >"$tmp/$row.$mode.$round.ms"
    else
        echo "$ms" >"$tmp/$row.$mode.$round.ms"
    fi
    awk '/^block_ms/ { $1 = ""; print substr($0, 2) }' "$out" >"$tmp/$row.$mode.$round.blocks"
    echo "$row $mode round $round: rc=$rc ms_per_step=${ms:--} ${secs}s blocks: $(cat "$tmp/$row.$mode.$round.blocks")" >>"$tmp/runs.txt"
    exit 0
fi

build=${1:-build}
rows=${MATRIX_ROWS:-gpt2 resnet compile ddp flax cupy cudart driver}
modes=${MATRIX_MODES:-idle trace rz rzl d2h leaks races}
rounds=${MATRIX_ROUNDS:-1}
export MATRIX_BLOCKS="${MATRIX_BLOCKS:-15}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MATRIX_LOCK=$tmp/lock
# the process that holds the lock on cores of its own, the ones importing on the rest
ncpu=$(nproc 2>/dev/null || echo 1)
if [ "$ncpu" -ge 8 ]; then
    export MATRIX_CPUS="${MATRIX_CPUS:-0-$((ncpu / 2 - 1))}"
    export MATRIX_IMPORT_CPUS="${MATRIX_IMPORT_CPUS:-$((ncpu / 2))-$((ncpu - 1))}"
fi
# JAX takes 75% of the GPU's memory at start unless told not to: a group's processes at once
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

# the jobs: for each row and round, a group of native and every mode, started together; each
# round's turns start one process later than the round before's (round 1: native, idle, trace,
# ...; round 2: idle, trace, ..., native), so that no configuration always follows the same one
: >"$tmp/jobs"
: >"$tmp/runs.txt"
set -- native $modes
n=$#
for row in $rows; do
    r=1
    while [ $r -le "$rounds" ]; do
        i=0
        for m in native $modes; do
            echo "$row $m $r $(((i + r - 1) % n)) $n" >>"$tmp/jobs"
            i=$((i + 1))
        done
        r=$((r + 1))
    done
done
echo "== gpu-matrix: $(wc -l <"$tmp/jobs") runs ($rounds group(s) of native and $(echo $modes | wc -w) modes for each of: $rows; $MATRIX_BLOCKS blocks each, in turns)"
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
# ratios MODE -> "median q1 q3" of block k of the mode's run against native's block k, pooled
# over the rounds ("" when a run failed or has no blocks)
ratios() {
    for r in $(seq 1 "$rounds"); do
        [ -s "$tmp/$row.native.$r.blocks" ] && [ -s "$tmp/$row.$1.$r.blocks" ] || { echo ERR; continue; }
        paste -d ' ' "$tmp/$row.native.$r.blocks" "$tmp/$row.$1.$r.blocks" |
            awk '{ h = NF / 2; for (k = 1; k <= h; k++) if ($k > 0) print $(k + h) / $k }'
    done | awk '/ERR/ { bad = 1 } !/ERR/ { v[++n] = $1 }
        END { if (bad || !n) exit
              for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
              m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
              printf "%.4f %.4f %.4f\n", m, v[int((n - 1) / 4) + 1], v[int(3 * (n - 1) / 4) + 1] }'
}
for row in $rows; do
    # a row's group runs at once (its processes take turns on the GPU); its figures come in as
    # it ends
    for r in $(seq 1 "$rounds"); do
        grep "^$row [a-z0-9]* $r " "$tmp/jobs" | xargs -P "$n" -L 1 sh "$0" --one "$build"
    done
    nat=$(med "$tmp/$row.native."*.ms)
    line=$(printf '%-8s %9s' "$row" "${nat:-ERR}")
    for m in $modes; do
        q=$(ratios "$m")
        lines=$(grep -c '' "$tmp/$row.$m.1.log" 2>/dev/null || echo 0)
        if [ -z "$nat" ] || [ -z "$q" ]; then
            cell="ERR ${lines}L"
            status=1
        else
            set -- $q
            x=$(awk -v t="$1" 'BEGIN { printf "%.2f", t }')
            echo "$row $m: block ratios median $1, quartiles $2 .. $3" >>"$tmp/runs.txt"
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
echo "== gpu-matrix: step time against native (median over the blocks taken in turns of the ratio to native's block), lines atlastrace printed, the mode's bar; $(($(date +%s) - start)) s"
cat "$table"
[ -n "$out" ] && cp "$table" "$out/matrix.txt"
[ $status -eq 0 ] && echo "gpu-matrix: PASS" || echo "gpu-matrix: FAIL"
exit $status
