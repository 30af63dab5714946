#!/bin/sh
# Red zones on real programs (issue #29): a PyTorch MLP training step and a
# Hugging Face GPT-2 training step (4 layers, width 256, batch 8x128, built
# from a config: no download), bench/core/torch_steps.py, in one run, each
# configuration a process of its own, the configurations interleaved, ROUNDS
# rounds (3), medians:
#   native       PyTorch's default (caching) allocator, no preload
#   routed       PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, no preload:
#                the pool red zones route PyTorch to, alone
#   default      ATLAS_REDZONE=64 ATLAS_REDZONE_POOLS=route (one driver
#                allocation per tensor; the quarantine on)
#   launch       the same with ATLAS_REDZONE_CHECK=launch
#   noquar       (RZ_TORCH_SPLIT=1) default without the quarantine
#   kept         (RZ_TORCH_KEPT=1) ATLAS_REDZONE=64: PyTorch keeps its
#                caching allocator (the default, ATLAS_REDZONE_POOLS=auto)
#   ledger       (RZ_TORCH_DECOMP=1) the routed pool with the allocation
#                ledger alone (ATLAS_LEAKS=1: a call stack per allocation)
#   nostack      (RZ_TORCH_DECOMP=1) default mode with ATLAS_STACK_DEPTH=0
# Bars (issue #29): default at most 1.05x the routed pool alone; launch at
# most 1.5x native; on both steps. Each process first runs WARM untimed MLP
# steps (120; GPT-2 a sixth of them, 20): the quarantine's 256 MB fill in
# about 70 MLP steps, and until then each allocation grows the pool (a
# one-off cost: with 30, default mode's MLP step measured 1.48x routed on
# the H200 where windows of steps after the fill lie within the routed
# pool's, bench/redzone/torch_windows.py). The same warm-up for every row.
#   run_torch_bench.sh BUILD [ROUNDS] [STEPS] [WARM]
set -eu
build=${1:-build}
rounds=${2:-3}
steps=${3:-${RZ_TORCH_STEPS:-200}}
warm=${4:-${RZ_TORCH_WARM:-120}}
lib=$(realpath "$build/libatlastrace.so")
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/atlas-torchbench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=bench/redzone/bench_common.sh
. "$here/bench_common.sh"

if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "(PyTorch with a GPU not found: the training-step rows are skipped)"
    exit 0
fi

# name|environment ("-": no preload; "native:...": set, no preload)|label
configs="native|-|native, caching allocator
routed|native:PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync|routed pool alone (\`backend:cudaMallocAsync\`, no preload)
default|ATLAS_REDZONE=64 ATLAS_REDZONE_POOLS=route|default mode, routed (\`ATLAS_REDZONE_POOLS=route\`)
launch|ATLAS_REDZONE=64 ATLAS_REDZONE_POOLS=route ATLAS_REDZONE_CHECK=launch|launch mode, routed"
# where default mode's cost goes (RZ_TORCH_SPLIT=1): without the quarantine of freed tensors
if [ "${RZ_TORCH_SPLIT:-0}" = 1 ]; then
    configs="$configs
noquar|ATLAS_REDZONE=64 ATLAS_REDZONE_POOLS=route ATLAS_REDZONE_QUARANTINE_MB=0|default mode, routed, no quarantine (\`ATLAS_REDZONE_QUARANTINE_MB=0\`)"
fi
# what a red zone costs per allocation, apart (RZ_TORCH_DECOMP=1): the allocation ledger alone on
# the routed pool (its call stacks included), then default mode without the call stacks
if [ "${RZ_TORCH_DECOMP:-0}" = 1 ]; then
    configs="$configs
ledger|PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync ATLAS_LEAKS=1|the allocation ledger alone on the routed pool (\`ATLAS_LEAKS=1\`)
nostack|ATLAS_REDZONE=64 ATLAS_REDZONE_POOLS=route ATLAS_STACK_DEPTH=0|default mode, routed, no call stacks (\`ATLAS_STACK_DEPTH=0\`)"
fi
if [ "${RZ_TORCH_KEPT:-0}" = 1 ]; then
    configs="$configs
kept|ATLAS_REDZONE=64|\`ATLAS_REDZONE=64\` (PyTorch's pool kept: the default)"
fi

r=0
while [ "$r" -lt "$rounds" ]; do
    echo "$configs" | while IFS='|' read -r name envs label; do
        run "$envs" "" python3 "$here/../core/torch_steps.py" "$steps" both "$warm" >"$tmp/out" ||
            true
        for m in mlp gpt2; do
            awk -v m="$m" '$1 == "ns_per_op_" m { printf "%.1f\n", $2 / 1000 }' "$tmp/out" \
                >>"$tmp/$m.$name"
        done
        grep -h '^gpt2 skipped' "$tmp/out" >"$tmp/skipped" || true
    done
    r=$((r + 1))
done

echo "### PyTorch training steps under red zones"
echo
echo "us per step (MLP: $steps steps after $warm untimed, SGD; GPT-2: $((steps / 4)) steps after"
echo "$((warm / 6 > 5 ? warm / 6 : 5)) untimed, AdamW, 4 layers of width 256, batch 8x128), each configuration"
echo "a process, interleaved, median of $rounds rounds; ratios to native and, for the red-zone rows,"
echo "to the routed pool alone."
echo
echo '| configuration | MLP us | x native | x routed | GPT-2 us | x native | x routed |'
echo '|---|---:|---:|---:|---:|---:|---:|'
echo "$configs" | while IFS='|' read -r name envs label; do
    row="| $label"
    for m in mlp gpt2; do
        v=$(median "$tmp/$m.$name") n=$(median "$tmp/$m.native") a=$(median "$tmp/$m.routed")
        row="$row | $v | $(cell "$v" "$n" | sed -n 's/.*(\(.*\))/\1/p') | $(cell "$v" "$a" | sed -n 's/.*(\(.*\))/\1/p')"
    done
    echo "$row |"
done
echo
# each round's figure, in the order run: the spread the medians hide (on the H200 the same
# configuration has moved by half from one round to the next)
echo "each round, us per step (MLP; GPT-2):"
echo "$configs" | while IFS='|' read -r name envs label; do
    printf '  %-8s %s; %s\n' "$name" "$(paste -sd' ' "$tmp/mlp.$name" 2>/dev/null)" \
        "$(paste -sd' ' "$tmp/gpt2.$name" 2>/dev/null)"
done
echo
[ -s "$tmp/skipped" ] && cat "$tmp/skipped"
# the bars, one line each
for m in mlp gpt2; do
    n=$(median "$tmp/$m.native") a=$(median "$tmp/$m.routed")
    d=$(median "$tmp/$m.default") l=$(median "$tmp/$m.launch")
    [ "$n" = - ] && continue
    awk -v m="$m" -v n="$n" -v a="$a" -v d="$d" -v l="$l" 'BEGIN {
        if (a != "-" && d != "-")
            printf "bar %s: default mode %.3fx the routed pool alone (at most 1.05x): %s\n", m, d / a,
                d / a <= 1.05 ? "met" : "NOT met"
        if (l != "-")
            printf "bar %s: launch mode %.3fx native (at most 1.5x): %s\n", m, l / n,
                l / n <= 1.5 ? "met" : "NOT met"
    }'
done
