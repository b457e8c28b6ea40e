import math
import random

import torch
import thunder

_cache = {}
scale = 0.5
EPS = 1e-5


class Model(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.use_residual = True

    def forward(self, x, residual=None):
        h = self.proj(x)
        if self.use_residual and residual is not None:
            h = h + residual
        if self.training:
            h = torch.nn.functional.dropout(h, 0.1)
        return h


model = Model(16)
jmodel = thunder.jit(model)


@thunder.jit
def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


@thunder.jit
def scaled(x):
    return x * scale


@thunder.jit
def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + EPS) * weight + bias


def make_scaler(factor):
    @thunder.jit
    def f(x):
        return x * factor

    return f


def make_counter():
    count = 0

    @thunder.jit
    def step(x):
        nonlocal count
        count += 1
        return x + count

    return step


@thunder.jit
def noisy(x):
    return x + random.random()


@thunder.jit
def memo(x):
    key = x.shape
    if key not in _cache:
        _cache[key] = torch.zeros_like(x)
    return x + _cache[key]


@thunder.jit
def normalize_(x):
    flat = x.view(-1)
    flat.sub_(flat.mean())
    return x


@thunder.jit
def fill_diag_(x, value):
    x.diagonal().fill_(value)
    return x


@thunder.jit
def reshape_sub_(x):
    y = x.reshape(-1)
    y.sub_(1)
    return x


@thunder.jit
def index_assign(x, idx, v):
    x[idx] = v
    return x


def helper(x):
    return x.sum().item()


@thunder.jit
def calls_helper(x):
    return x * helper(x)


@thunder.jit
def with_optional(x, bias=None, training: bool = False):
    if bias is not None:
        x = x + bias
    if training:
        x = x * 2
    return x

