"""Dropout in training on CPU joins fusion regions with eager's draws: ATen's CPU dropout is
`x * (empty_like(x).bernoulli_(1 - p) / (1 - p))`, so the trace draws that noise (a random prim with no tensor
operand, laid out as empty_like lays x out) and the scaling and product fuse with their neighbours; an op made
from no tensor is made before the open regions instead of splitting them. Values, gradients and the generator's
state after the call against eager's (the generator's state bit for bit)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.executors.inductor import InductorExecutor

AOT_EAGER = InductorExecutor(backend="aot_eager")


def _outside(trace):
    return [b.symbol.name for b in trace.bsyms if getattr(b.symbol, "region", None) is None]


def _regions(trace):
    return [b for b in trace.bsyms if getattr(b.symbol, "region", None) is not None]


def _same_as_eager(fn, args, executors, calls=3):
    jf = compiler.jit(fn, executors=executors)
    for seed in range(calls):
        torch.manual_seed(seed)
        out = jf(*args)
        grads = torch.autograd.grad(out.sum(), [a for a in args if a.requires_grad])
        after = torch.rand(3)  # the generator is where eager leaves it
        torch.manual_seed(seed)
        ref = fn(*args)
        ref_grads = torch.autograd.grad(ref.sum(), [a for a in args if a.requires_grad])
        # (float tolerance: the fused path's decompositions round differently in the last bits; a different mask
        # would differ by whole values)
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(grads, ref_grads)
        assert torch.equal(after, torch.rand(3))
    return compiler.last_traces(jf)[-1]


def _mlp(x, w1, w2):
    h = F.dropout(F.gelu(x @ w1), 0.1, True)
    return F.dropout(h @ w2 + x, 0.25, True) * 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_training_dropout_joins_the_region_with_eagers_draws(dtype):
    gen = torch.Generator().manual_seed(0)
    x, w1, w2 = (torch.randn(s, generator=gen).to(dtype).requires_grad_() for s in ((6, 8), (8, 16), (16, 8)))
    trace = _same_as_eager(_mlp, (x, w1, w2), (AOT_EAGER, "torch"))
    assert len(_regions(trace)) == 1
    assert _outside(trace) == ["prims.bernoulli_noise", "prims.bernoulli_noise"]  # drawn first, in eager's order


def test_through_real_inductor():
    gen = torch.Generator().manual_seed(1)
    x, w1, w2 = (torch.randn(s, generator=gen).requires_grad_() for s in ((6, 8), (8, 16), (16, 8)))
    trace = _same_as_eager(_mlp, (x, w1, w2), ("inductor", "torch"))
    assert len(_regions(trace)) == 1


def test_the_noise_is_laid_out_as_eagers_empty_like():
    """bernoulli_ fills memory in order: a transposed input's noise is drawn in its own layout."""
    def f(x):
        return F.dropout(x.t() * 3, 0.5, True) + 1

    x = torch.randn(7, 5).requires_grad_()
    _same_as_eager(f, (x,), (AOT_EAGER, "torch"))


@pytest.mark.parametrize("case", ["p0", "p1", "eval", "inplace", "torch-p0"])
def test_dropout_aten_runs_otherwise_is_the_op_or_nothing(case):
    """p of 0 and eval: ATen returns the input itself and draws nothing, so the trace holds nothing there and the
    region goes on (ViT's configs put such a dropout after every layer); p of 1 (zeros, no draw) and in-place
    stay the op."""
    def f(x):
        y = torch.tanh(x) * 2
        if case == "p0":
            y = F.dropout(y, 0.0, True)
        elif case == "p1":
            y = F.dropout(y, 1.0, True)
        elif case == "eval":
            y = F.dropout(y, 0.3, False)
        elif case == "inplace":
            y = F.dropout(y, 0.3, True, inplace=True)
        else:
            y = torch.dropout(y, 0.0, True)
        return (y + 1).exp()

    x = torch.randn(4, 5).requires_grad_()
    trace = _same_as_eager(f, (x,), (AOT_EAGER, "torch"))
    outside = _outside(trace)
    assert "prims.bernoulli_noise" not in outside
    if case in ("p0", "eval", "torch-p0"):
        assert outside == [] and len(_regions(trace)) == 1, outside
    else:
        assert any("dropout" in n for n in outside), outside


def test_random_ops_between_keep_their_order_and_creation_ops_do_not_split_regions():
    def f(x):
        h = F.dropout(torch.tanh(x) * 2, 0.2, True)
        r = torch.rand(x.shape)  # a draw between the two dropouts
        idx = torch.arange(x.shape[1], dtype=x.dtype)
        return F.dropout(h + r * idx, 0.4, True).exp()

    x = torch.randn(3, 6).requires_grad_()
    trace = _same_as_eager(f, (x,), (AOT_EAGER, "torch"))
    assert len(_regions(trace)) == 1
    draws = [n for n in _outside(trace) if n in ("prims.bernoulli_noise", "torch.rand")]
    assert draws == ["prims.bernoulli_noise", "torch.rand", "prims.bernoulli_noise"]
