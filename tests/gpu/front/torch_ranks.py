"""Two ranks of one SPMD script, for atlas-diff across ranks.

    torch_ranks.py same     every rank runs the same steps
    torch_ranks.py branch   rank 1 takes another branch in the third step
                            (an extra kernel), as a rank-dependent bug would

Steps are NVTX ranges named "step". The rank comes from RANK (torchrun sets
it, or the caller does); the device is LOCAL_RANK's when there are enough
GPUs, else GPU 0. No process group: the ranks only need to be processes of
one job, each writing its own trace (ATLAS_TRACE_FILE with %r)."""
import os
import sys

import torch

rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", str(rank)))
dev = torch.device("cuda", local if local < torch.cuda.device_count() else 0)
branch = sys.argv[1] == "branch"

x = torch.ones(4096, device=dev)
y = torch.zeros(4096, device=dev)
y.add_(x)  # warm up outside any step
torch.cuda.synchronize(dev)
for i in range(4):
    torch.cuda.nvtx.range_push("step")
    y.mul_(0.5)
    y.add_(x)
    if branch and rank == 1 and i == 2:
        y.sub_(x)  # the branch only rank 1 takes
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize(dev)
print(f"rank {rank}: ok, y[0] = {y[0].item():.4f}")
