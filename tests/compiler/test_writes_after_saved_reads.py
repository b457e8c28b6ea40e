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


def _tanh_then_write_later_segment(w, a):
    v = torch.tanh(w * 2)  # eager saves tanh's result: a write into it before backward raises there
    if v.sum() > 0:
        v.mul_(2)
    return v * 3


@pytest.mark.parametrize("path", PATHS)
def test_a_write_into_a_result_eager_saved_raises_at_backward_as_in_eager(path):
    """A fused region recomputes tanh from its input in the backward, so a write into tanh's result (in a later
    segment, or by the caller after the call) went unnoticed where eager's backward raises (aliasing_fuzz seed
    144246): the region's forward saves that result too, for autograd's version check."""
    def after_the_call(w):
        return torch.tanh(w * 2)

    for fn, write_after in ((_tanh_then_write_later_segment, False), (after_the_call, True)):
        jf = compiler.jit(fn, executors=PATHS[path]) if fn is after_the_call else \
            compiler.jit(lambda w: fn(w, None), executors=PATHS[path])
        for sign in (1.0, -1.0, 1.0):
            outcomes = []
            for f in (jf, fn if fn is after_the_call else (lambda w: fn(w, None))):
                w = torch.full((2, 2), sign, requires_grad=True)
                out = f(w)
                if write_after:
                    out.mul_(2)
                try:
                    out.sum().backward()
                    outcomes.append(("grad", w.grad))
                except RuntimeError as e:
                    assert "modified by an inplace operation" in str(e)
                    outcomes.append(("raised", None))
            (kind, got), (want_kind, want) = outcomes
            assert kind == want_kind, (fn.__name__, sign, kind)
            if kind == "grad":
                torch.testing.assert_close(got, want, rtol=0, atol=0)
