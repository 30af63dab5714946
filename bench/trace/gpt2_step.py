"""A Hugging Face GPT-2 training step, timed (bench/trace/run_gpt2_bench.sh).

    gpt2_step.py [WARMUP] [STEPS]

GPT-2 built from a config (4 layers, width 256, 4 heads; no download), AdamW,
a batch of 8 sequences of 128 random tokens; each step: forward with the
labels, backward, the optimizer step, and the loss read on the host (a
sync). After WARMUP steps (default 10), STEPS steps (default 60) are timed
one by one; prints "step_ms M" (their median) and "ok"."""
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def main(warmup, steps):
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128)
    model = GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    first = step()
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        last = step()
        times.append(time.perf_counter() - t0)
    times.sort()
    print("step_ms %.3f" % (1e3 * times[len(times) // 2]))
    print("loss: first %.4f last %.4f" % (first, last))
    print("ok" if last < first else "FAIL: the loss did not go down")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10, int(sys.argv[2]) if len(sys.argv) > 2 else 60)
