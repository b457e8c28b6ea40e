"""A small GPT training step compiled with torch.compile (inductor), as a training script would be written:
demo program for docs/observe.md and bench/observe_overhead.py. `--steps N` sets the number of steps."""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads, self.dropout = heads, dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, layers=2, block=64, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.tok.weight = self.head.weight

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(torch.arange(T, device=idx.device)))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def lr_at(step, warmup=5, total=100, base=3e-3):
    if step < warmup:
        return base * (step + 1) / warmup
    return base * 0.5 * (1 + math.cos(math.pi * min(1.0, step / total)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--time", action="store_true", help="print the median CPU and wall time of the steady steps")
    args = p.parse_args()
    torch.manual_seed(0)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=lr_at(0))
    compiled = torch.compile(model)
    data = torch.randint(0, 256, (64, 65))
    walls, cpus = [], []
    for step in range(args.steps):
        wall, cpu = time.perf_counter(), time.process_time()
        batch = data[torch.randint(0, 64, (8,))]
        _, loss = compiled(batch[:, :-1], batch[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.step()
        opt.zero_grad(set_to_none=True)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    model.eval()
    with torch.no_grad():
        logits = compiled(data[:2, :16])
    print(f"loss {loss.item():.3f}, sample logits {tuple(logits.shape)}")
    if args.time:  # the steps after the first two (compiled, then steady), as bench/observe_overhead.py reads them
        print("timing", json.dumps({"wall_ms": 1000 * statistics.median(walls[2:]),
                                    "cpu_ms": 1000 * statistics.median(cpus[2:])}))


if __name__ == "__main__":
    main()
