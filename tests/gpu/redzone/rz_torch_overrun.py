# A PyTorch program whose custom (Triton) kernel writes one element too many:
# its mask is `offs <= n` instead of `offs < n`. Run with
# PYTORCH_NO_CUDA_MEMORY_CACHING=1, so each tensor is its own cudaMalloc and
# the stray element lands in that allocation's red zone.
import torch
import triton
import triton.language as tl


@triton.jit
def off_by_one_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs <= n)  # the bug: <= n


n = 1024  # 4096 bytes: a whole number of the allocator's 512-byte units
x = torch.zeros(n, device="cuda", dtype=torch.float32)
BLOCK = 256
off_by_one_kernel[(n // BLOCK + 1,)](x, n, BLOCK=BLOCK)
torch.cuda.synchronize()
print("sum", float(x.sum()))
del x
torch.cuda.synchronize()
print("done")
