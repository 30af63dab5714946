# A PyTorch program whose custom (Triton) kernel writes one element too many:
# its mask is `offs <= n` instead of `offs < n`.
#   rz_torch_overrun.py        a 4096-byte tensor: with one driver allocation
#                              per tensor (PYTORCH_NO_CUDA_MEMORY_CACHING=1, or
#                              ATLAS_REDZONE_POOLS=route) the stray element
#                              lands in that allocation's red zone
#   rz_torch_overrun.py big    PyTorch's default (caching) allocator: a 16 MiB
#                              tensor gets a segment of its own (tensors of
#                              10 MiB and more do, rounded up to 2 MiB), so the
#                              stray element lands in the segment's red zone;
#                              unrelated work on other tensors (a matmul, a
#                              reduction, elementwise ops) runs around it, and
#                              the segment is freed by empty_cache()
import gc
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def off_by_one_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs <= n)  # the bug: <= n


big = len(sys.argv) > 1 and sys.argv[1] == "big"
n = (4 << 20) if big else 1024  # 16 MiB or 4096 bytes
BLOCK = 1024 if big else 256
# The kernel is compiled first, on a small tensor it stays inside (n=1024
# specialises as 4<<20 does: both divisible by 16), and garbage is collected
# after `del x`. On a fresh machine (a cold Triton cache) the H200 suite twice
# found the overrun at exit, not at the segment's free, where eight runs on a
# warm cache found it at the free: the likely cause is a reference to x kept
# by the first call's compile, which left the segment out of empty_cache().
w = torch.zeros(1024 + 1, device="cuda", dtype=torch.float32)
off_by_one_kernel[(1024 // BLOCK + 1,)](w, 1024, BLOCK=BLOCK)
torch.cuda.synchronize()
a = torch.randn(256, 256, device="cuda")
x = torch.zeros(n, device="cuda", dtype=torch.float32)
b = a @ a
c = (b * 2 + 1).sum()
off_by_one_kernel[(n // BLOCK + 1,)](x, n, BLOCK=BLOCK)
d = torch.relu(a).mean() + c
torch.cuda.synchronize()
print("sum", float(x.sum()), "other %.4g" % float(d))
del x
gc.collect()
torch.cuda.synchronize()
torch.cuda.empty_cache()  # the caching allocator frees its free segments
print("done")
