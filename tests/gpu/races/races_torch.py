"""PyTorch programs for make races-gpu-check (tests/gpu/races/run_races.sh), one per run:

    races_torch.py side raced|fixed       x filled on the current stream, read on a side stream
                                          without (raced) or after (fixed) side.wait_stream
    races_torch.py allreduce raced|fixed  an all-reduce (NCCL, one rank, ReduceOp.AVG: a kernel
                                          on NCCL's stream) whose result the compute stream
                                          updates in place without (raced) or after work.wait()
    races_torch.py allgather raced|fixed  the same with all_gather_into_tensor (one rank: a copy
                                          on NCCL's stream), its output read on the compute stream
    races_torch.py train                  a training loop whose batches are copied in on a side
                                          stream, ordered with wait_stream and record_stream
    races_torch.py ddp                    DistributedDataParallel over NCCL, one rank
    races_torch.py triton raced|fixed     a Triton kernel (no types in its name) writes x on a
                                          side stream; the current stream reads it without
                                          (raced) or after (fixed) wait_stream

Prints "ok" at the end."""
import os
import sys
import tempfile

import torch

N = 1 << 20


def side(raced):
    x = torch.empty(N, device="cuda")
    x.fill_(1.0)  # a TensorIterator kernel: x is its output
    s = torch.cuda.Stream()
    if not raced:
        s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 2  # reads x on the side stream
    torch.cuda.current_stream().wait_stream(s)
    y.record_stream(torch.cuda.current_stream())
    return float(y.sum())


def init_pg():
    import torch.distributed as dist

    f = tempfile.NamedTemporaryFile(prefix="races-pg-", delete=False)
    f.close()
    os.unlink(f.name)
    dist.init_process_group("nccl", init_method="file://" + f.name, rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    return dist


def allreduce(raced):
    dist = init_pg()
    t = torch.ones(N, device="cuda")
    torch.cuda.synchronize()
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    if not raced:
        work.wait()
    t.mul_(2)  # the compute stream writes the all-reduce's result
    if raced:
        work.wait()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def allgather(raced):
    dist = init_pg()
    inp = torch.ones(N, device="cuda")
    out = torch.empty(N, device="cuda")
    torch.cuda.synchronize()
    work = dist.all_gather_into_tensor(out, inp, async_op=True)
    if not raced:
        work.wait()
    y = out * 2  # the compute stream reads the gathered output
    if raced:
        work.wait()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return float(y.sum())


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10)).cuda()


def train():
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    copy = torch.cuda.Stream()
    host = [torch.randn(64, 256).pin_memory() for _ in range(4)]
    labels = torch.randint(0, 10, (64,), device="cuda")
    for step in range(20):
        with torch.cuda.stream(copy):
            x = host[step % 4].to("cuda", non_blocking=True)
        torch.cuda.current_stream().wait_stream(copy)
        x.record_stream(torch.cuda.current_stream())
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), labels).backward()
        opt.step()
    torch.cuda.synchronize()


def ddp():
    init_pg()
    m = torch.nn.parallel.DistributedDataParallel(model(), device_ids=[0])
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(64, 256, device="cuda")
    labels = torch.randint(0, 10, (64,), device="cuda")
    for _ in range(10):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), labels).backward()
        opt.step()
    torch.cuda.synchronize()
    torch.distributed.destroy_process_group()


def triton_case(raced):
    import triton
    import triton.language as tl

    @triton.jit
    def fill_kernel(x_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + i, i.to(tl.float32) * 0.5 + 3.0, mask=i < n)

    x = torch.zeros(N, device="cuda")
    grid = (N // 1024,)
    fill_kernel[grid](x, N, BLOCK=1024)  # compiled and run once, ordered
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fill_kernel[grid](x, N, BLOCK=1024)
    if not raced:
        torch.cuda.current_stream().wait_stream(s)
    y = x * 2  # reads x on the current stream
    torch.cuda.synchronize()
    return float(y.sum())


def main():
    case = sys.argv[1]
    raced = len(sys.argv) > 2 and sys.argv[2] == "raced"
    {"side": lambda: side(raced), "allreduce": lambda: allreduce(raced),
     "allgather": lambda: allgather(raced), "train": train, "ddp": ddp,
     "triton": lambda: triton_case(raced)}[case]()
    print("ok")


main()
