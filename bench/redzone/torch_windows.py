"""The PyTorch steps of bench/core/torch_steps.py, timed in windows (issue #29):
where a configuration's cost goes over a run, e.g. while the red zones'
quarantine fills.
    torch_windows.py MODEL STEPS WINDOW [PREWARM_MB]
MODEL: mlp or gpt2. Prints "TAG MODEL us us ...": TAG from the environment
(variable TAG), then the us per step of each window of WINDOW steps, each
window ended by torch.cuda.synchronize(). PREWARM_MB: a tensor of that many
MiB made and freed before the first step (a pool grown in one go)."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from torch_steps import gpt2_step, mlp_step  # noqa: E402

which, steps, win = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
prewarm = int(sys.argv[4]) if len(sys.argv) > 4 else 0
step = mlp_step() if which == "mlp" else gpt2_step()
if isinstance(step, str):
    sys.exit("gpt2 skipped: " + step)
if prewarm:
    t = torch.empty(prewarm << 20, dtype=torch.uint8, device="cuda")
    del t
torch.cuda.synchronize()
out = []
tw = time.perf_counter()
for i in range(steps):
    step()
    if (i + 1) % win == 0:
        torch.cuda.synchronize()
        t = time.perf_counter()
        out.append("%.0f" % ((t - tw) / win * 1e6))
        tw = t
print(os.environ.get("TAG", "?"), which, " ".join(out), flush=True)
