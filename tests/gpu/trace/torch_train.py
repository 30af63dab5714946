"""A PyTorch training loop: a 3-layer MLP, SGD, forward, backward and
optimizer step, every step identical in its host values. The forward pass
is launched from the main thread, the backward pass from autograd's own
thread (on the same stream), so a step must take that thread's ops too.

    torch_train.py nvtx   each iteration inside an NVTX range "step"
                          (ATLAS_STEP=nvtx:step)
    torch_train.py sync   each iteration ends with loss.item(), a host sync
                          (ATLAS_STEP=sync, the default)

A marker op in the backward pass (a Triton kernel named bwd_marker, from a
custom autograd function) shows that the backward kernels are in the steps
(check_train.py counts it in the JSON lines). Run under
LD_PRELOAD=libatlastrace.so ATLAS_TRACE=1 (see run_trace.sh)."""
import sys

import torch
import triton
import triton.language as tl

WARMUP = 3
STEPS = 10


@triton.jit
def bwd_marker(g_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(g_ptr + offs, tl.load(g_ptr + offs, mask=m) * 1.0, mask=m)


class Marker(torch.autograd.Function):
    """Identity forward; its backward launches bwd_marker (on autograd's thread)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous().clone()
        n = g.numel()
        bwd_marker[(triton.cdiv(n, 1024),)](g, n, BLOCK=1024)
        return g


def main(mode):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randn(64, 10, device="cuda")

    def iteration():
        opt.zero_grad()
        # the marker sits after the first layer, whose output needs a
        # gradient (x needs none: autograd would never call its backward)
        out = model[1:](Marker.apply(model[0](x)))
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(WARMUP):  # lazy initialisation, allocator growth
        iteration().item()
    torch.cuda.synchronize()
    for _ in range(STEPS):
        if mode == "nvtx":
            torch.cuda.nvtx.range_push("step")
            iteration()
            torch.cuda.nvtx.range_pop()
        else:
            iteration().item()
    torch.cuda.synchronize()
    print("ok: trained", STEPS, "steps")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvtx")
