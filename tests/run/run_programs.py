"""The programs the `thunder-lint run` tests run: written into the test's tmp folder, run in subprocesses.

Each is real PyTorch with a few known sharp edges; the line numbers the tests expect are found by the
marker comments (`# <-TL201`), never written by hand."""

TRAIN = '''\
"""A small GPT-like model trained for 20 steps with a DataLoader and AdamW."""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
VOCAB, CTX, DIM = 32, 8, 16
settings = {"temperature": 1.0}  # a module global read inside the compiled loss


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        h = self.ln1(x)
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(1, CTX, DIM))
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        x = self.tok(idx) + self.pos
        x = self.blocks(x)
        flat = x.reshape(-1, DIM)
        flat.mul_(1.0)  # <-TL101
        return self.head(flat)


@torch.compile
def loss_fn(logits, targets):
    return nn.functional.cross_entropy(logits / settings["temperature"], targets.reshape(-1))  # <-TL201


data = torch.randint(0, VOCAB, (80, CTX + 1))
loader = DataLoader(TensorDataset(data[:, :-1], data[:, 1:]), batch_size=8, shuffle=True)
model = torch.compile(GPT())
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
step = 0
while step < 20:
    for x, y in loader:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")
        step += 1
        if step == 20:
            break
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
'''

GENERATE = '''\
"""A Hugging Face-style greedy generation loop: a kv cache, argmax tokens, stop at EOS."""
import sys

import torch
from torch import nn

torch.manual_seed(0)
VOCAB, DIM, EOS = 16, 8, int(sys.argv[1]) if len(sys.argv) > 1 else 3


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.pe = nn.Parameter(torch.randn(12, DIM))
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, token, k_cache, v_cache, pos):
        x = self.emb(token) + self.pe[pos]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        k_cache[:, pos] = k[:, 0]
        v_cache[:, pos] = v[:, 0]
        att = (q @ k_cache[:, : pos + 1].transpose(1, 2)).softmax(-1)
        return self.out(att @ v_cache[:, : pos + 1])


lm = TinyLM()
lm.compile()


@torch.compile
def next_token(logits):
    tok = logits[:, -1].argmax(-1, keepdim=True)
    done = bool(tok[0, 0] == EOS)  # <-TL302
    return tok, done


with torch.no_grad():
    k_cache, v_cache = torch.zeros(1, 12, DIM), torch.zeros(1, 12, DIM)
    token, out = torch.tensor([[1]]), []
    for pos in range(12):
        token, done = next_token(lm(token, k_cache, v_cache, pos))
        out.append(int(token))
        if done:
            break
print("generated", out)
'''

SMALL = '''\
"""Every entry point, a refusal, Python effects: small enough to start fast."""
import sys
import warnings

import torch
from torch import nn

import analyzer
import compiler
import thunder  # the fake package beside this file: its jit must be replaced too

counter = {"n": 2}


@torch.compile(backend="eager")
def side(x):
    print("side effect")  # <-TL204
    return x * 2


def refused(x):
    print("refused runs")  # <-TL204-refused
    return x + torch.cov(x.reshape(1, -1))  # <-TL003


def scaled(x):
    return x * counter["n"]  # <-TL201


class Gate(nn.Module):
    def forward(self, x):
        if x.sum().item() > 0:  # <-TL302
            return x + 1
        return x - 1


def flat_add(x):
    return x.flatten().add_(1)  # <-TL101


refused_c = torch.compile(refused)
thunder_scaled = thunder.jit(scaled)
gate = Gate()
gate.compile(mode="reduce-overhead")
compiled_flat = compiler.jit(flat_add)
checked_scaled = analyzer.jit(scaled, sharp_edges="warn")
warnings.simplefilter("always")
for i in range(3):
    print(side(torch.ones(1)).item())
    print(refused_c(torch.zeros(1)).shape)
    print(thunder_scaled(torch.ones(1)).item(), checked_scaled(torch.ones(1)).item())
    print(gate(torch.full((2,), float(i - 1))).tolist())
    print(compiled_flat(torch.zeros(2, 2)).tolist())
print("argv", sys.argv[1:])
'''

FAKE_THUNDER = '''\
def jit(fn, **options):  # stands in for lightning-thunder: eager, so plain python runs the program too
    return fn
'''

FAILING = '''\
import torch


@torch.compile
def step(x):
    print("step")  # <-TL204
    return x + 1


x = torch.zeros(1)
for i in range(100):
    x = step(x)
    if i == 2:
        raise ValueError("the program's own bug")
'''

ENDLESS = '''\
import torch


@torch.compile
def step(x):
    print("step")  # <-TL204
    return x + 1


x = torch.zeros(1)
while True:
    x = step(x)
'''
