# PyTorch under the preload (make sync-gpu-check): a loop with .item(),
# boolean-mask indexing and non_blocking copies to pageable and to pinned
# memory. The script knows how many of each it did; atlastrace's counters
# (read through ctypes: atlas_sync_count, exported by the preload) must agree.
import ctypes
import sys

import torch

lib = ctypes.CDLL(None)
try:
    count = lib.atlas_sync_count
except AttributeError:
    print("FAIL: atlas_sync_count not found: is libatlastrace.so preloaded?")
    sys.exit(1)
count.restype = ctypes.c_longlong
count.argtypes = [ctypes.c_char_p]
KEYS = ["blocking_d2h", "dtoh", "memcpy", "async-d2h-pageable", "async-h2d-pageable",
        "stream-sync", "ctx-sync", "event-sync"]


def snap():
    return {k: count(k.encode()) for k in KEYS}


def delta(a, b):
    d = {k: b[k] - a[k] for k in KEYS}
    d["host_syncs"] = d["stream-sync"] + d["ctx-sync"] + d["event-sync"]
    return d


N = 200
status = 0


def check(name, ok, d):
    global status
    print(("PASS" if ok else "FAIL") + ": torch " + name + ": " +
          " ".join("%s=%d" % (k, v) for k, v in d.items() if v))
    if not ok:
        status = 1


x = torch.randn(1 << 16, device="cuda")
pageable = torch.empty(1 << 16)
pinned = torch.empty(1 << 16, pin_memory=True)
# warm up every operation once, so lazy initialisation is not counted
(x * 2).sum().item()
x[x > 0]
pageable.copy_(x, non_blocking=True)
pinned.copy_(x, non_blocking=True)
torch.cuda.synchronize()

a = snap()
for i in range(N):
    (x * i).sum().item()
d = delta(a, snap())
# PyTorch copies the scalar into pinned memory and then synchronises the
# stream (older versions copied into pageable memory: a blocking copy). Either
# way each .item() blocks the host once or twice, never zero times.
check(".item() x%d: the host blocks once or twice each (a sync, or a blocking copy)" % N,
      (d["host_syncs"] >= N or d["blocking_d2h"] >= N) and
      d["host_syncs"] + d["blocking_d2h"] <= 2 * N, d)

torch.cuda.synchronize()
a = snap()
for i in range(N):
    x[x > 0]
d = delta(a, snap())
check("x[x > 0] x%d: the host blocks at least once each (a sync or a blocking copy)" % N,
      N <= d["host_syncs"] + d["blocking_d2h"] <= 3 * N, d)

torch.cuda.synchronize()
a = snap()
for i in range(N):
    pageable.copy_(x, non_blocking=True)
d = delta(a, snap())
check("copy_(non_blocking=True) to pageable x%d: each a hidden sync" % N,
      d["async-d2h-pageable"] == N and d["blocking_d2h"] == N, d)

torch.cuda.synchronize()
a = snap()
for i in range(N):
    pinned.copy_(x, non_blocking=True)
d = delta(a, snap())
check("copy_(non_blocking=True) to pinned x%d: not blocking" % N, d["blocking_d2h"] == 0, d)
torch.cuda.synchronize()
sys.exit(status)
