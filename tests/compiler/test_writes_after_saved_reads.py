"""In-place writes into a tensor after an op that autograd records has read it, through the functional (fused)
path, against eager's backward: eager's op saves what its formula needs (`a * w` saves `a` for w's gradient,
`sigmoid(a) * w` saves sigmoid's result, not `a`), and its backward raises where a saved tensor was written
since. A fused region's VJP recomputes from the region's inputs instead, so which inputs it keeps is not what eager
saves: the compiled call must give eager's gradients where eager's backward runs and raise where it raises.
(bench/aliasing_fuzz.py seed 130680: a write after a data-dependent branch, in a later segment.)"""
from __future__ import annotations

import pytest
import torch

import compiler
from compiler.executors.inductor import InductorExecutor

FUNCTIONAL = (InductorExecutor(backend="aot_eager"), "torch")
PATHS = {"default": None, "functional": FUNCTIONAL}


def _sigmoid_then_write_later_segment(w, a):
    v = torch.sigmoid(a) * w  # eager saves sigmoid(a), not a
    if a.sum() > 0:  # a data-dependent branch: the write is in the next segment
        a.mul_(2)
    return v


def _sigmoid_then_write(w, a):
    v = torch.sigmoid(a) * w
    a.mul_(2)
    return v


def _product_then_write(w, a):
    v = (a * w).exp()  # eager saves a (for w's gradient): its backward raises after the write
    a.mul_(2)
    return v


def _product_then_write_later_segment(w, a):
    v = (a * w).exp()
    if a.sum() > 0:
        a.mul_(2)
    return v


def _backward(fn, sign):
    w = torch.randn(2, 2, requires_grad=True)
    a = torch.full((1,), float(sign))
    out = fn(w, a)
    try:
        out.sum().backward()
    except RuntimeError as e:
        return ("raised", "modified by an inplace operation" in str(e)), a
    return ("grad", w.grad), a


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("program", [_sigmoid_then_write_later_segment, _sigmoid_then_write, _product_then_write,
                                     _product_then_write_later_segment])
def test_backward_after_a_write_into_what_a_recorded_op_read_is_eagers(program, path):
    jf = compiler.jit(program, executors=PATHS[path])
    for sign in (-1, 1, 1):  # the branch not taken, then taken (a second path of segments), then its cache
        torch.manual_seed(0)
        (kind, got), a_jit = _backward(jf, sign)
        torch.manual_seed(0)
        (want_kind, want), a_eager = _backward(program, sign)
        assert kind == want_kind, (sign, kind, got)
        if kind == "grad":
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        else:
            assert got and want  # autograd's own error, as eager's
        assert torch.equal(a_jit, a_eager)
