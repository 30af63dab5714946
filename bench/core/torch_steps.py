"""PyTorch eager training steps, timed: one configuration per process, so
run_bench.sh and bench/redzone/run_torch_bench.sh can interleave them.
  torch_steps.py [STEPS] [MODEL] [WARM]
WARM: untimed steps first (the MLP's; GPT-2 gets a sixth of them, at least
5; default 30). MODEL: mlp (the default: a small MLP, SGD; prints ns_per_op, per step), gpt2
(a Hugging Face GPT-2 of 4 layers of width 256 built from a config, no
download, batch 8x128, AdamW; prints ns_per_op_gpt2, per step) or both (the
two, in that order, prints ns_per_op_mlp and ns_per_op_gpt2). Without
transformers the GPT-2 line is "gpt2 skipped: ...". mlp_step() and gpt2_step()
build the steps for other timers (bench/redzone/torch_windows.py)."""
import sys
import time

import torch
import torch.nn.functional as F


def timed(step, n, warm):
    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e9


def mlp_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def gpt2_step():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        return str(e)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128)
    model = GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
    return step


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    which = sys.argv[2] if len(sys.argv) > 2 else "mlp"
    warm = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    if which in ("mlp", "both"):
        ns = timed(mlp_step(), steps, warm)
        print(f"ns_per_op{'_mlp' if which == 'both' else ''} {ns:.1f}", flush=True)
    if which in ("gpt2", "both"):
        step = gpt2_step()
        if isinstance(step, str):
            print(f"gpt2 skipped: {step}")
        else:
            print(f"ns_per_op_gpt2 {timed(step, max(steps // 4, 10), max(warm // 6, 5)):.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
