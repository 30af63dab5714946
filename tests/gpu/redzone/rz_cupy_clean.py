# Ordinary CuPy work with red zones on: there must be no report at all.
# `driver`: one driver allocation per array (cupy.cuda.set_allocator(None),
# docs/redzone.md), else CuPy's default memory pool.
import sys

import cupy as cp

if len(sys.argv) > 1 and sys.argv[1] == "driver":
    cp.cuda.set_allocator(None)
total = 0.0
for i in range(200):
    a = cp.arange(4096 + i, dtype=cp.float32)
    b = a * 2 + 1
    total += float(cp.dot(a, b)) / 1e9
    del a, b
cp.cuda.Device().synchronize()
print("total %.6g" % total)
print("done")
