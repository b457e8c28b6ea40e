"""Precision: patterns taken from transformers/torchvision that must stay quiet, and the real hazards that
must be reported (each case is a trimmed copy of the shape of real code)."""

import pytest

from analyzer.static import lint_source


def codes(src, **kw):
    return [d.code for d in lint_source(src, with_fixes=False, **kw)]


QUIET_TL101 = {
    "fresh temporary from torch.stack": """
import torch
def f(t, h, w, start):
    ids = torch.stack([t, h, w], dim=0).reshape(3, -1)
    ids[0] += start
    return ids
""",
    "name rebound to its own reshape": """
import torch
def f(x, n):
    x = x * 2
    x = x.reshape(n, -1)
    x += 1
    return x
""",
    "permute().contiguous() of a fresh local": """
import torch
def f(h, w):
    coords = torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w)))
    rel = coords[:, :, None] - coords[:, None, :]
    rel = rel.permute(1, 2, 0).contiguous()
    rel[:, :, 0] += h - 1
    return rel.sum(-1)
""",
    "cast of an argument in a return": """
import torch
def f(image, dtype):
    if dtype == torch.float32:
        return image.to(dtype).mul_(1.0 / 255)
    return image.to(dtype) * 2
""",
    "only metadata of the base read later": """
import torch
def f(keypoints):
    keypoints = keypoints.clone().reshape(-1, 2)
    index = keypoints.to(dtype=torch.long)
    index.clamp_(0, 10)
    return index.to(keypoints.dtype)
""",
    "base overwritten by copy_ afterwards": """
import torch
def step(params, update):
    for p in params:
        p32 = p
        if p.dtype in {torch.float16, torch.bfloat16}:
            p32 = p32.float()
        p32.add_(-update)
        if p.dtype in {torch.float16, torch.bfloat16}:
            p.copy_(p32)
""",
    "numpy arrays": """
import numpy as np
import torch
def f(coords, is_box):
    coords = np.asarray(coords).astype(float)
    if is_box:
        coords = coords.reshape(-1, 2, 2)
    coords[..., 0] = coords[..., 0] * 2
    flat = coords.flatten()
    flat[0] = 1
    return coords
""",
    "always-view ops": """
import torch
def f(weight, scale, mask):
    weight.unflatten(-1, (2, -1)).mul_(scale)
    v = mask.view(4, -1)
    v[:, 1].scatter_(1, scale, 0)
    return weight, mask
""",
    "advanced indexing copies": """
import torch
def f(x, idx):
    y = x.reshape(-1)[idx]
    y += 1
    return x, y
""",
    "read only in the other branch": """
import torch
def f(x, flag):
    if flag:
        y = torch.zeros(3)
        z = y.reshape(-1)
        z.add_(1)
        return z
    else:
        return y
""",
    "read only after an early return of the writing block": """
import torch
def f(n, flag):
    t = torch.zeros(n, n)
    if flag:
        flat = t.reshape(-1)
        flat[0] = 1
        return flat
    return t
""",
    "explicit deep copy": """
import copy
import torch
def f(x):
    y = copy.deepcopy(x.reshape(-1))
    y.add_(1)
    return x
""",
    "script code at module level on a fresh temporary": """
import torch
flat = torch.zeros(4, 4).reshape(-1)
flat[0] = 1.0
""",
    "type() without arguments is a string": """
import torch
def f(x):
    s = x.type()
    s += "!"
    return x, s
""",
}


@pytest.mark.parametrize("name", list(QUIET_TL101))
def test_tl101_quiet(name):
    assert "TL101" not in codes(QUIET_TL101[name])


LOUD_TL101 = {
    # transformers generation/logits_process.py: the caller's scores are modified when reshape is a view
    "argument rebound to its reshape, then written": """
import torch
def __call__(self, input_ids, scores):
    scores = scores.reshape(-1, self.num_channels, scores.shape[-1])
    scores[:, 1:, self.eos_id:] = -float("inf")
    return scores.reshape(-1, scores.shape[-1])
""",
    # transformers gemma3n: the output object's tensor is scaled in place through reshape + permute
    "tensor owned by an object, through reshape and a view": """
import torch
def get_image_features(self, pixel_values):
    vision_outputs = self.vision_tower(pixel_values)
    last_hidden_state = vision_outputs.last_hidden_state
    last_hidden_state = last_hidden_state.reshape(last_hidden_state.shape[0], 8, 4).permute(0, 2, 1)
    last_hidden_state *= 0.5
    vision_outputs.pooler_output = self.embed(last_hidden_state)
    return vision_outputs
""",
    "live local read after the write (a view for every layout)": """
import torch
def f(n):
    t = torch.zeros(n, n)
    flat = t.flatten()
    flat[::n + 1] = 1
    return t
""",
    "write inside a loop, base read at the loop head": """
import torch
def f(acc, xs):
    total = torch.zeros(4)
    for x in xs:
        s = total.sum()
        view = total.reshape(2, 2)
        view.add_(x)
    return s
""",
    "module global": """
import torch
buf = torch.zeros(4, 4)
def f(x):
    buf.reshape(-1).copy_(x)
""",
    "out= into a reshaped attribute": """
import torch
def f(self, a, b):
    torch.mul(a, b, out=self.cache.reshape(-1))
""",
    "script code at module level writes through a global": """
import torch
weights = torch.zeros(4, 4)
flat = weights.reshape(-1)
flat[0] = 1.0
""",
    "nn.init on a reshaped argument": """
import torch
from torch import nn
def init_(w):
    nn.init.xavier_uniform_(w.reshape(w.shape[0], -1))
""",
}


@pytest.mark.parametrize("name", list(LOUD_TL101))
def test_tl101_loud(name):
    assert "TL101" in codes(LOUD_TL101[name])


def test_tl301_not_on_none_checks_flags_or_module_attributes():
    src = """
import torch
class M(torch.nn.Module):
    def forward(self, x, mask=None, use_cache: bool = False, mode="a"):
        if mask is not None:
            x = x * mask
        if self.training:
            x = x * 2
        if use_cache:
            x = x + 1
        if mode == "a":
            x = x - 1
        if x.ndim == 3:
            x = x.sum(0)
        return x
m = torch.compile(M(), dynamic=True)
"""
    assert codes(src) == []


def test_tl301_on_shapes_scalars_and_derived_values():
    src = """
import torch
@torch.compile(dynamic=True)
def f(x, n: int, k=4):
    m = x.shape[0] // 2
    assert n > 0
    y = x if k > 2 else -x
    while m > 1:
        m = m // 2
    return min(n, 3) * y
"""
    found = [(d.code, d.line, d.message) for d in lint_source(src)]
    # the assert computes nothing; the rest is one finding per function, naming the other lines
    assert [(c, line) for c, line, _ in found] == [("TL301", 7)]
    assert "(and 1 more in this function, line 8)" in found[0][2]  # `min(n, 3)` is symbolic, no recompile


def test_tl302_item_and_tensor_tests_but_not_shape_tests():
    src = """
import thunder, torch
@thunder.jit
def f(x, y):
    if x.shape[0] > 2:
        x = x[:2]
    if (x > 0).any():
        x = -x
    n = y.max().item()
    if bool(torch.isnan(x).any()):
        return x
    return x / n
"""
    found = [(d.code, d.line) for d in lint_source(src)]
    assert found == [("TL302", 7), ("TL302", 9), ("TL302", 10)]


def test_tl201_judgement_of_module_globals():
    src = """
import math
import torch
import thunder
from typing import Optional
EPS = 1e-6
RETRIES = 1
RETRIES = 2
table = {"a": 1}
lr = 0.1
try:
    import apex
except ImportError:
    apex = None
def helper(x):
    return x
class Cfg:
    pass
@thunder.jit
def f(x):
    y = helper(x) * EPS + math.pi
    cfg = Cfg()
    return y * RETRIES + table["a"] * lr + (apex is None) + len(__name__) + len(str(cfg))
"""
    found = sorted(d.message.split("`")[3] for d in lint_source(src) if d.code == "TL201")
    assert found == ["RETRIES", "lr", "table"]


def test_tl202_tl203_scoping_of_comprehensions_lambdas_and_classes():
    src = """
import thunder
def make(xs, scale):
    offset = 1
    @thunder.jit
    def f(x):
        ys = [x * i for i in range(3)]
        g = lambda t: t + x
        class Local:
            k = 2
            def m(self):
                return self.k
        return sum(ys) + g(x) * offset
    return f
"""
    found = [(d.code, d.message.split("`")[3]) for d in lint_source(src)]
    assert found == [("TL202", "offset")]


def test_tl204_respects_shadowing_and_module_origin():
    src = """
import thunder
import numpy.random as random
from time import perf_counter as clock
@thunder.jit
def f(x, print=print):
    print(x)
    t = clock()
    return x * random.rand() + t
"""
    found = [(d.code, d.line, d.message.split("`")[1]) for d in lint_source(src)]
    # `random` is numpy.random here: a draw from NumPy's global generator (named as such), not Python's random
    assert found == [("TL204", 8, "time.perf_counter()"), ("TL204", 9, "numpy.random.rand()")]


def test_jit_rules_quiet_on_loggers_vars_of_objects_string_modes_flags_and_containers():
    # the logger is no hidden input (TL201); its call is a side effect (TL204, issue 31: a graph break under
    # torch.compile, tests/rules/test_rule_tl204_torch_compile.py)
    src = """
import logging
import torch
logger = logging.getLogger(__name__)
@torch.compile(dynamic=True)
def f(x, feats: list[torch.Tensor], padding, use_bias, **kwargs):
    logger.warning("tracing")
    cfg = vars(kwargs.get("config"))
    if padding == "same":
        x = x + 1
    if use_bias:
        x = x + 2
    kwargs["return_dict"] = True
    feats[0] = feats[0] * 2
    return x, feats, cfg
"""
    assert codes(src) == ["TL204"]


def test_tl102_view_of_an_input_made_by_squeeze():
    # the shape of transformers' question-answering heads: labels squeezed, then clamped in place
    src = """
import torch
@torch.compile
def loss(logits, start_positions):
    if len(start_positions.size()) > 1:
        start_positions = start_positions.squeeze(-1)
    start_positions.clamp_(0, logits.shape[1])
    return logits.gather(1, start_positions)
"""
    assert [(d.code, d.line) for d in lint_source(src)] == [("TL102", 7)]
