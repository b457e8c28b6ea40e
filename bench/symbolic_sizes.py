"""Which ops still specialize sizes under cache="symbolic values": small models called at 4 input sizes.

For each model it prints the traces made for 4 sizes (1 = one trace served every size), whether every call
equals eager, and the specializations the last trace recorded (constraints `... == value` with the op or
Python construct that needed a plain number). A model listed with more than one trace names the op to
give a shape rule (compiler/symbolic/shape_rules.py) or the decision that is inherent to the program.

Per call it prints the wall seconds of the jitted call (the first includes tracing; with a fusing executor,
each new size or number also pays the fused plan's trace and any region compile).

    python3 bench/symbolic_sizes.py [--executors torch|inductor,torch|...] [--only NAME]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compiler  # noqa: E402


class UNetish(nn.Module):
    """Conv encoder/decoder: strided conv, ceil-mode pool, transposed conv, upsampling, a skip by cat."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.down = nn.MaxPool2d(2, ceil_mode=True)
        self.mid = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.out = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        e = self.enc(x)
        m = F.relu(self.mid(self.down(e)))
        u = self.up(m)
        u = F.pad(u, (0, e.shape[-1] - u.shape[-1], 0, e.shape[-2] - u.shape[-2]))  # odd sizes: pad back
        y = self.out(torch.cat([e, u], 1))
        return F.interpolate(y, scale_factor=0.5, mode="bilinear").flatten(1)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(3, 2, ceil_mode=True),
                               nn.Conv2d(8, 16, 3, groups=2), nn.ReLU(), nn.AdaptiveMaxPool2d((2, 2)))
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.f(x), 1)).log_softmax(-1)


class GPT(nn.Module):
    """Token + position embeddings, causal self-attention (a tril mask and sdpa), GELU MLP, tied head."""

    def __init__(self, v=50, c=32, h=4, t=64):
        super().__init__()
        self.h = h
        self.wte, self.wpe = nn.Embedding(v, c), nn.Embedding(t, c)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c))
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        q, k, v = self.qkv(self.ln1(x)).split(x.size(-1), dim=2)
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, -1)
        y2 = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, -1)
        x = x + self.proj(y + y2)
        x = x + self.mlp(self.ln2(x))
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class RNNish(nn.Module):
    """A GRU and an LSTM over a sequence, a 1-d conv over time, last step and mean over time."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)
        self.lstm = nn.LSTM(16, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.conv = nn.Conv1d(32, 8, 3, padding=1)

    def forward(self, x):
        y, _ = self.gru(x)
        z, (h, c) = self.lstm(y)
        w = self.conv(z.transpose(1, 2)).transpose(1, 2)
        return torch.cat([w[:, -1], w.mean(1), h.transpose(0, 1).flatten(1)], 1)


class TorchEncoder(nn.Module):
    """nn.TransformerEncoderLayer (nn.MultiheadAttention inside) with a padding mask and a causal mask."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x):
        t = x.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(t)
        return self.layer(x, src_mask=causal)


class ManualRNN(nn.Module):
    """A loop over time steps: the trip count is a decision of the program (one trace per length, by design)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 16)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], 16)
        for i in range(x.shape[1]):
            h = self.cell(x[:, i], h)
        return h


def _gpt_inputs(b, t):
    g = torch.Generator().manual_seed(t)
    return torch.randint(0, 50, (b, t), generator=g), torch.randint(0, 50, (b, t), generator=g)


MODELS = {
    "unet-ish CNN": (UNetish, lambda s: (torch.randn(2, 3, s, s + 3),), [8, 11, 14, 17]),
    "classifier CNN": (Classifier, lambda s: (torch.randn(2, 3, s, s + 1),), [9, 12, 15, 18]),
    "GPT block": (GPT, lambda s: _gpt_inputs(2, s), [5, 9, 16, 23]),
    "GRU/LSTM": (RNNish, lambda s: (torch.randn(3, s, 8),), [4, 7, 10, 13]),
    "nn.Transformer layer": (TorchEncoder, lambda s: (torch.randn(2, s, 32),), [5, 9, 16, 23]),
    "manual RNN loop": (ManualRNN, lambda s: (torch.randn(3, s, 8),), [4, 7, 10, 13]),
}


def _specializations(jf) -> list[str]:
    from compiler.core import events as ev

    out = []
    for e in compiler.last_events(jf):
        if e.kind == ev.SYMBOLIC_CONSTRAINT and e.details.get("kind") == "specialize":
            line = f"{e.details['constraint']}  ({e.details['reason']})"
            if line not in out:
                out.append(line)
    return out


def run(name, executors):
    make, inputs, sizes = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    jm = compiler.jit(model, cache="symbolic values", executors=executors)
    equal, seconds = True, []
    with torch.no_grad():
        for s in sizes:
            args = inputs(s)
            start = time.perf_counter()
            out = jm(*args)
            seconds.append(time.perf_counter() - start)
            ref = model(*args)
            equal &= out.shape == ref.shape and torch.allclose(out, ref, atol=1e-5, rtol=1e-4)
    return compiler.cache_misses(jm), equal, _specializations(jm), seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--executors", default="torch", help="comma-separated executor names")
    p.add_argument("--only", default=None)
    a = p.parse_args(argv)
    executors = tuple(a.executors.split(","))
    for name in MODELS:
        if a.only and a.only not in name:
            continue
        traces, equal, spec, seconds = run(name, executors)
        print(f"{name:22s} traces for 4 sizes: {traces}  equal eager: {equal}  seconds per call: "
              + " ".join(f"{t:.2f}" for t in seconds))
        for line in spec:
            print(f"    specializes: {line}")


if __name__ == "__main__":
    main()
