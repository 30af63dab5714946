"""A GPT-2-like PyTorch training step, timed (make races-gpu-check's cost figure): 4 layers,
width 256, 4 heads, 128 positions, batch 8 x 128 tokens, AdamW, built from a config (no
download: transformers' GPT2LMHeadModel when transformers is installed, else the same
architecture written out below). Prints "ms_per_step X" (median of 5 blocks of steps after a
warm-up; "ms_per_block" gives the five) and which model it built. One configuration per process, so run_races.sh can
interleave native, idle, traced and race-checked runs.

    gpt2_step.py [STEPS] [sync]

"sync" ends each step with the host reading the loss (a sync: a step of the step trace at
syncs, bench/trace/run_gpt2_bench.sh)."""
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS, WIDTH, HEADS, POSITIONS, VOCAB, BATCH = 4, 256, 4, 128, 50257, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(WIDTH)
        self.attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln2 = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.out = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.attn(self.ln1(x)).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(POSITIONS, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.wte.weight
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * LAYERS))

    def forward(self, idx, labels):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))


def build():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(n_layer=LAYERS, n_embd=WIDTH, n_head=HEADS, n_positions=POSITIONS,
                         vocab_size=VOCAB)
        m = GPT2LMHeadModel(cfg)
        return "transformers GPT2LMHeadModel", lambda idx, labels: m(idx, labels=labels).loss, m
    except ImportError:
        m = GPT()
        return "hand-written GPT-2", m, m


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    sync = len(sys.argv) > 2 and sys.argv[2] == "sync"
    torch.manual_seed(0)
    name, run, m = build()
    m.cuda().train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    idx = torch.randint(0, VOCAB, (BATCH, POSITIONS), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = run(idx, idx)
        loss.backward()
        opt.step()
        if sync:
            loss.item()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    blocks = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps // 5):
            step()
        torch.cuda.synchronize()
        blocks.append((time.perf_counter() - t0) / (steps // 5) * 1e3)
    print(f"model {name}")
    print("ms_per_block " + " ".join(f"{b:.3f}" for b in blocks))
    print(f"ms_per_step {statistics.median(blocks):.3f}")


main()
