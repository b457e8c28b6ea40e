"""Returned views keep eager's layout through the fused path (executors=("inductor", "torch")).

A view of an intermediate that the function then writes into (`t1 = z + 1`, `t2 = t1.narrow(0, 1, 1)`,
`t2.mul_(2)`, `return t2`) is, in eager, a view of t1: t1's strides (z's permuted layout) and offset, its _base
t1. The functional trace computes the written value on its own (laid out as the write made it: (2, 1, 2) where
eager has (2, 1, 4)); it must take the view again from t1's final value (t1's storage, as in eager). Real inductor,
every cache mode.
"""
from __future__ import annotations

import pytest
import torch

import compiler

MODES = ["constant values", "symbolic values", "no caching"]
FUSED = ("inductor", "torch")


def narrow_written(z):
    t1 = z + 1
    t2 = t1.narrow(0, 1, 1)
    t2.mul_(2)
    return t2


def narrow_written_then_read(z):
    t1 = ((z.sin() + 1).cos() * 2).exp()  # (a region of its own)
    t2 = t1.narrow(0, 1, 1)
    t2.mul_(3)
    return (t2 * 2 + 1).tanh(), t2, t1.sum()


def permuted_slice_written(z):
    t1 = z * 2
    t2 = t1.permute(2, 0, 1)[1:]
    t2.add_(1)
    return t2


def _permuted():
    return torch.randn(5, 2, 2).permute(1, 2, 0)  # strides (2, 1, 4)


def _layout(t):
    return tuple(t.shape), t.stride(), t.storage_offset(), t._base is not None, t.untyped_storage().nbytes()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [narrow_written, narrow_written_then_read, permuted_slice_written])
def test_returned_view_of_a_written_intermediate_keeps_eager_layout(fn, mode):
    jfn = compiler.jit(fn, cache=mode, executors=FUSED)
    for call in range(3):  # (a trace, then cache hits)
        z = _permuted()
        expected, actual = fn(z.clone()), jfn(z.clone())
        expected = expected if isinstance(expected, tuple) else (expected,)
        actual = actual if isinstance(actual, tuple) else (actual,)
        for a, e in zip(actual, expected):
            torch.testing.assert_close(a, e)
            assert _layout(a) == _layout(e), f"call {call}: {_layout(a)}, eager's {_layout(e)}"



_W = torch.tensor(1.5)


def as_strided_of_a_region_output(a):
    # eager's softmax of a transposed input is contiguous (3, 1); inductor lays the fused `w * softmax(a.t())` out
    # like its input, and as_strided after the region read other elements (fuzz seed 4942)
    v = _W * torch.nn.functional.softmax(a, dim=-1)
    return v.as_strided((2,), (1,)), v.stride()


@pytest.mark.parametrize("mode", MODES)
def test_a_region_output_keeps_the_traced_layout_for_the_ops_after_it(mode):
    jfn = compiler.jit(as_strided_of_a_region_output, cache=mode, executors=FUSED)
    for seed in range(3):
        a = torch.randn(3, 3, generator=torch.Generator().manual_seed(seed)).t()
        got, want = jfn(a), as_strided_of_a_region_output(a)
        assert got[1] == want[1] == (3, 1)
        torch.testing.assert_close(got[0], want[0])
