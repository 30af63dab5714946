"""A PyTorch step loop marked with NVTX ranges named "step", where a Triton
kernel takes a position argument.

    torch_nvtx.py changing   the position grows by one each step: the report
                             must name add_pos's position argument
    torch_nvtx.py constant   nothing changes: no report at all
    torch_nvtx.py graph      the same in-place region captured into a CUDA
                             graph twice (replay-safe), then a third time
                             with another scalar (not replay-safe)
Run under LD_PRELOAD=libatlastrace.so ATLAS_TRACE=1 (see run_trace.sh)."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["pos"])
def add_pos(x_ptr, pos, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, x + pos, mask=m)


def step_body(x, y, pos):
    add_pos[(1,)](x, pos, x.numel(), BLOCK=1024)
    y.mul_(1.0)


def nvtx_loop(changing):
    x = torch.zeros(1024, device="cuda")
    y = torch.ones(1024, device="cuda")
    step_body(x, y, 101)  # compile and warm up outside any step
    torch.cuda.synchronize()
    for i in range(5):
        torch.cuda.nvtx.range_push("step")
        # 101..105: never 1 and never a multiple of 16, values Triton would
        # otherwise specialise on
        step_body(x, y, 101 + i if changing else 103)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print("ok: nvtx loop, x[0] =", x[0].item())


def graph_captures():
    x = torch.ones(4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up, as torch's docs ask before capture
        x.mul_(2.0)
        x.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graphs = []
    for add in (1.0, 1.0, 5.0):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            x.mul_(2.0)
            x.add_(add)
        graphs.append(g)
    for g in graphs:
        g.replay()
    torch.cuda.synchronize()
    print("ok: graphs captured", len(graphs))


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "changing"
    if mode == "graph":
        graph_captures()
    else:
        nvtx_loop(mode == "changing")
