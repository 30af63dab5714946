# The missing record_stream (issue #29): a tensor made on the default stream
# is written by a kernel on a side stream that is still running (behind a
# sleep) when the program frees the tensor on the default stream without
# x.record_stream(side). Natively its memory goes back to the pool at once
# and the next tensor may get it: the late write corrupts that one. To run
# with ATLAS_REDZONE and ATLAS_REDZONE_POOLS=route (one driver allocation per
# tensor): the freed bytes wait poisoned in the quarantine and the late write
# is reported as a write after free. `clean`: with record_stream.
import sys

import torch

clean = len(sys.argv) > 1 and sys.argv[1] == "clean"
print("backend", torch.cuda.get_allocator_backend())
# Both kernels launched once first: with CUDA's lazy loading (the default) a kernel's first
# launch loads its module, which waits for the device, so a first x.add_ would wait out the
# sleep before the free and the write would not be late at all (seen on the H200: the freed
# bytes still held the poison after the sync).
w = torch.zeros(16, device="cuda")
w.add_(1.0)
torch.cuda._sleep(1000)
torch.cuda.synchronize()
del w
x = torch.zeros(1 << 20, device="cuda")  # 4 MiB
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    torch.cuda._sleep(200_000_000)  # about 0.1 s: the host frees x meanwhile
    x.add_(1.0)  # the late write
if clean:
    x.record_stream(side)
del x  # the bug: freed on the default stream while `side` still uses it
y = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
print("done")
