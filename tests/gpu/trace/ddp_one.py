"""DistributedDataParallel over NCCL with one rank (tests/gpu/trace/run_programs.sh).

    ddp_one.py [WARMUP] [STEPS]

A 3-layer MLP wrapped in DDP (backend NCCL, world size 1, MASTER_ADDR
127.0.0.1: no gloo), trained with SGD: WARMUP steps, then a marker kernel
(torch.cuda._sleep, alone before a sync of its own), then STEPS steps; each
step ends with torch.cuda.synchronize(). Issue #30 saw 91 of 93 steps
"differ" (NCCL's set-up memsets fresh allocations at each sync); from the
marker on, the report must say nothing. Prints "ok" at the end."""
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(warmup, steps):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    ddp = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(128, 64, device=dev)
    y = torch.randint(0, 10, (128,), device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        return loss

    first = step().item()
    # the steady loop keeps the last step's loss alive into the next step, so the warm-up
    # does too: otherwise the first step after the marker sees one tensor fewer in the caching
    # allocator than the rest, and may place an activation in another segment (seen once on
    # the H200: one report at the second step after the marker, rightly)
    last = None
    for _ in range(warmup - 1):
        last = step()
    torch.cuda._sleep(1000)  # the marker: the steady state begins after its step
    torch.cuda.synchronize()
    for _ in range(steps):
        last = step()
    last = last.item()
    dist.destroy_process_group()
    print("loss: first %.4f last %.4f" % (first, last))
    print("ok" if last < first else "FAIL: the loss did not go down")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10, int(sys.argv[2]) if len(sys.argv) > 2 else 30)
