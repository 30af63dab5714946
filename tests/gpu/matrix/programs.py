"""The real-program matrix's Python programs (make gpu-matrix, tests/gpu/matrix/run_matrix.sh).

    programs.py NAME

NAME is one of gpt2, resnet, compile, ddp, flax, cupy: a training (or, for CuPy, compute) loop
as its users write it, each step ending with the host reading a value (loss.item(): a sync, where
the step trace's default mode ends a step). Prints "ms_per_step X", the median of its timed
blocks, and "block_ms X Y ...", each block's mean step time in order.

The runner starts one process of the program for native and for each mode at once (a group),
and they take turns on the GPU. Process against process, run one after another, the same
configuration spread 15-45% on the H100 (bench/RESULTS.md sections 13-16, and this session's
resnet native 9.2 / 11.4 / 10.1 ms), and blocks within one run as much: the machine's speed
drifts over seconds, wider than every bar of the matrix. So the blocks of the group's processes
interleave, block k of each process in turn (native's, then each mode's), a fraction of a second
apart, and the runner compares each mode's block k with native's block k.

Everything from the first use of the GPU to the end of the warm-up runs under an exclusive lock on
the file MATRIX_LOCK names, so no two processes set up or warm up at once (with the lock taken
only for the timed steps, another process's CUDA set-up or compilation beside them moved a
driver-API step from 0.29 to 0.93 ms). Warm, a process marks itself ready (MATRIX_TURNS/ready.I)
and waits until all MATRIX_N processes of its group are ready (or have ended: dead.I, which the
runner writes when one exits), then times MATRIX_BLOCKS blocks (5 unless set): block k in turn
k * MATRIX_N + MATRIX_I (the counter in MATRIX_TURNS/turn, moved under turn.lock), each after one
untimed step (the GPU was another process's). A process holds cores of its own from its first use
of the GPU (MATRIX_CPUS; the others import on MATRIX_IMPORT_CPUS). The warm-up lasts at least
WARM steps and 0.3 s (the GPU's clocks rise), and each timed block at least STEPS / 5 steps and
0.1 s. Without MATRIX_TURNS a process times its blocks at once."""
import fcntl
import os
import statistics
import sys
import time


def cpus(spec):
    """"0-3,8" as a set of core numbers."""
    out = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def pin(var):
    """Every thread of this process onto the cores the variable names (unset: left alone)."""
    spec = os.environ.get(var)
    if not spec:
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus(spec))
        except OSError:
            pass  # a thread that ended meanwhile


_lock = None


def gpu_lock():
    """From here on, this process alone uses the GPU until its warm-up ends (MATRIX_LOCK unset:
    no lock), on the cores MATRIX_CPUS names, which no process that is still importing uses
    (MATRIX_IMPORT_CPUS)."""
    global _lock
    path = os.environ.get("MATRIX_LOCK")
    if path:
        _lock = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(_lock, fcntl.LOCK_EX)
    pin("MATRIX_CPUS")


class Turns:
    """The group's turns on the GPU (the module's text says how; timed.h does the same)."""

    def __init__(self):
        self.dir = os.environ.get("MATRIX_TURNS") or None
        self.n = int(os.environ.get("MATRIX_N", "1"))
        self.i = int(os.environ.get("MATRIX_I", "0"))

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _turn(self):
        try:
            with open(self._path("turn")) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def _advance(self, t):
        """The turn from t to t + 1, unless another process moved it meanwhile."""
        fd = os.open(self._path("turn.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self._turn() == t:
                tmp = self._path(f"turn.{os.getpid()}")
                with open(tmp, "w") as f:
                    f.write(f"{t + 1}\n")
                os.replace(tmp, self._path("turn"))
        finally:
            os.close(fd)

    def ready(self):
        """Warm: the GPU lock goes, and this waits until the whole group is warm."""
        global _lock
        if _lock is not None:
            fcntl.flock(_lock, fcntl.LOCK_UN)
            os.close(_lock)
            _lock = None
        if not self.dir:
            return
        open(self._path(f"ready.{self.i}"), "w").close()
        until = time.monotonic() + float(os.environ.get("MATRIX_READY_WAIT", "240"))
        while time.monotonic() < until:
            if all(os.path.exists(self._path(f"ready.{k}")) or
                   os.path.exists(self._path(f"dead.{k}")) for k in range(self.n)):
                return
            time.sleep(0.01)

    def wait(self, slot):
        while self.dir:
            t = self._turn()
            if t >= slot:
                return
            if os.path.exists(self._path(f"dead.{t % self.n}")):
                self._advance(t)  # a process that ended early: its turns pass
            else:
                time.sleep(0.0005)

    def done(self, slot):
        if self.dir:
            self._advance(slot)


pin("MATRIX_IMPORT_CPUS")


def timed(step, warm, steps, what):
    t0 = time.perf_counter()
    n = 0
    while n < warm + 1 or time.perf_counter() - t0 < 0.3:
        step()
        n += 1
    turns = Turns()
    turns.ready()
    blocks = []
    per = max(1, steps // 5)
    for k in range(int(os.environ.get("MATRIX_BLOCKS", "5"))):
        slot = k * turns.n + turns.i
        turns.wait(slot)
        step()  # untimed: the GPU was another process's
        t0 = time.perf_counter()
        n = 0
        while n < per or time.perf_counter() - t0 < 0.1:
            step()
            n += 1
        blocks.append((time.perf_counter() - t0) / n * 1e3)
        turns.done(slot)
    print(f"model {what}")
    print(f"ms_per_step {statistics.median(blocks):.3f}")
    print("block_ms " + " ".join(f"{b:.4f}" for b in blocks), flush=True)


def gpt2():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    gpu_lock()

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128, vocab_size=50257)
    m = GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    idx = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = m(idx, labels=idx).loss
        loss.backward()
        opt.step()
        return loss.item()

    timed(step, 10, 30, "transformers GPT2LMHeadModel (4 layers, width 256, batch 8x128), AdamW")


def resnet():
    import torch

    try:
        import timm

        m, what = timm.create_model("resnet18", num_classes=10), "timm resnet18"
    except ImportError:
        import torchvision

        m, what = torchvision.models.resnet18(num_classes=10), "torchvision resnet18"
    gpu_lock()
    torch.manual_seed(0)
    m = m.cuda().train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    timed(step, 10, 30, what + " (batch 32x3x64x64), SGD")


def compiled():
    import torch

    gpu_lock()

    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 10)).cuda()
    cm = torch.compile(m, mode="reduce-overhead")
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(256, 512, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")

    def step():
        torch.compiler.cudagraph_mark_step_begin()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(cm(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    timed(step, 10, 50, 'torch.compile(mode="reduce-overhead") MLP, SGD')


def ddp():
    import socket

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    gpu_lock()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    torch.cuda.set_device(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10)).cuda()
    d = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(d.parameters(), lr=0.01)
    x = torch.randn(256, 256, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(d(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    timed(step, 10, 50, "DistributedDataParallel over NCCL, one rank, MLP, SGD")
    dist.destroy_process_group()


def flax():
    import flax.linen as nn
    import jax
    import optax

    gpu_lock()

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(1024)(x))
            x = nn.relu(nn.Dense(1024)(x))
            return nn.Dense(10)(x)

    kx, ky, kp = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(kx, (256, 256))
    y = jax.random.randint(ky, (256,), 0, 10)
    model = MLP()
    params = model.init(kp, x)
    opt = optax.adam(1e-3)
    st = {"p": params, "s": opt.init(params)}

    @jax.jit
    def train_step(p, s, x, y):
        def loss_fn(p):
            return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

        loss, g = jax.value_and_grad(loss_fn)(p)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    def step():
        st["p"], st["s"], loss = train_step(st["p"], st["s"], x, y)
        return float(loss)

    timed(step, 10, 50, "Flax MLP, optax.adam, jax.jit")


def cupy():
    import cupy as cp

    gpu_lock()

    saxpy = cp.RawKernel(r'''
    extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }''', "saxpy")
    n = 1 << 20
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.zeros(n, dtype=cp.float32)

    def step():
        saxpy(((n + 255) // 256,), (256,), (cp.float32(0.5), x, y, cp.int32(n)))
        z = cp.tanh(y) * 2.0 + x  # temporaries from CuPy's pool
        return float(z.sum())

    timed(step, 10, 100, "CuPy RawKernel (extern \"C\" saxpy), elementwise, sum")


PROGRAMS = {"gpt2": gpt2, "resnet": resnet, "compile": compiled, "ddp": ddp, "flax": flax,
            "cupy": cupy}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PROGRAMS:
        sys.exit("usage: programs.py " + "|".join(PROGRAMS))
    PROGRAMS[sys.argv[1]]()
