# PyTorch programs that run with CUDA graphs, to run natively and under red
# zones and compare what they print (issue #29: under ATLAS_REDZONE the library
# once routed PyTorch to cudaMallocAsync, on which CUDA graph trees fail):
#   reduce-overhead  torch.compile(mode="reduce-overhead"): CUDA graph trees
#   max-autotune     torch.compile(mode="max-autotune"): the same, autotuned
#   graph-pool       torch.cuda.graph with a private pool, a second graph
#                    sharing it, replayed with new inputs
#   trees-train      graph trees in training: forward, backward, optimizer
# Each prints its outputs to 6 significant digits; then "done".
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
which = sys.argv[1:] or ["reduce-overhead", "max-autotune", "graph-pool", "trees-train"]


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 64)).cuda()


def show(tag, t):
    t = t.detach().float()
    head = " ".join("%.6g" % v for v in t.flatten()[:6].tolist())
    print(tag, head, "sum %.6g" % float(t.sum()), flush=True)


def inputs(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(32, 64, device="cuda", generator=g)


for mode in ("reduce-overhead", "max-autotune"):
    if mode not in which:
        continue
    torch.manual_seed(1)
    f = torch.compile(mlp(), mode=mode)
    for i in range(5):  # warm-up, recording, replays
        out = f(inputs(10 + i))
    torch.cuda.synchronize()
    show(mode, out)

if "graph-pool" in which:
    torch.manual_seed(2)
    m = mlp()
    static_in = inputs(20)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            m(static_in)
    torch.cuda.current_stream().wait_stream(side)
    pool = torch.cuda.graph_pool_handle()
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, pool=pool):
        out1 = m(static_in)
    with torch.cuda.graph(g2, pool=pool):  # shares the private pool
        out2 = m(out1)
    for i in range(4):
        static_in.copy_(inputs(30 + i))
        g1.replay()
        g2.replay()
    torch.cuda.synchronize()
    show("graph-pool", out2)

if "trees-train" in which:
    torch.manual_seed(3)
    m = mlp()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    cm = torch.compile(m, mode="reduce-overhead")
    x, y = inputs(40), inputs(41)
    losses = []
    for i in range(6):
        torch.compiler.cudagraph_mark_step_begin()
        loss = ((cm(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss))
    print("trees-train", " ".join("%.6g" % v for v in losses), flush=True)

print("done")
