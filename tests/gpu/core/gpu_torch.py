"""Real-GPU target: PyTorch eager training steps of a small MLP, then a
torch.cuda.CUDAGraph captured and replayed.

Under the preload, atlas_stats_snapshot() (found through ctypes) brackets
each region, and torch.profiler records the CUDA API calls of the eager
region: run_core.sh compares the two. The losses printed on stdout must be
the same with and without the preload.

    python3 gpu_torch.py TRUTH.json
"""
import ctypes
import json
import sys
from collections import Counter

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

STEPS, REPLAYS = 20, 50

snap = None
try:
    snap = ctypes.CDLL(None).atlas_stats_snapshot
    snap.argtypes = [ctypes.c_char_p]
except AttributeError:
    pass


def mark(label):
    torch.cuda.synchronize()
    if snap:
        snap(label.encode())


torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device=dev)
y = torch.randint(0, 10, (64,), device=dev)


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(3):
    step()

mark("eager-begin")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    losses = []
    for _ in range(STEPS):
        losses.append(step().item())
    torch.cuda.synchronize()
mark("eager-end")
api = Counter(e.name for e in prof.events() if e.name.startswith("cu"))

# CUDA graph: forward of the same model on a static input.
static_x = torch.randn(64, 256, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        static_out = model(static_x)
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_out = model(static_x)
mark("graph-begin")
for i in range(REPLAYS):
    static_x.add_(0.001)
    g.replay()
mark("graph-end")
out = static_out.sum().item()

for i, l in enumerate(losses):
    print(f"torch: step {i} loss {l:.6f}")
print(f"torch: graph out {out:.4f}")
with open(sys.argv[1], "w") as f:
    json.dump({"steps": STEPS, "replays": REPLAYS, "api": api}, f, indent=1, sort_keys=True)
