"""What the nvFuser executor does with the tensors a definition returns (no nvFuser needed: plain tensors stand in
for its outputs): they come back in the traced layout, expanded layouts included, and in memory of their own
where the traced result is no view."""
from __future__ import annotations

import torch

from compiler.executors.layouts import in_layout
from compiler.executors.nvfuser import _as_traced


def test_an_expanded_layout_is_rebuilt_with_one_copy_of_each_value():
    want = torch.arange(8.0).reshape(1, 8).expand(3, 8)  # stride (0, 1): a broadcast result
    got = in_layout(want.contiguous(), (3, 8), (0, 1))
    assert got.stride() == (0, 1) and torch.equal(got, want)
    want = torch.arange(6.0).reshape(3, 2).t().unsqueeze(0).expand(4, 2, 3)  # stride (0, 1, 2)
    got = in_layout(want.contiguous(), tuple(want.shape), tuple(want.stride()))
    assert got.stride() == want.stride() and torch.equal(got, want)


def test_an_output_in_an_input_s_memory_gets_its_own_unless_it_was_a_view():
    x = torch.randn(4, 1)
    same = x.view(4, 1)  # what nvFuser may return for x.sum(1, keepdim=True)
    (got,) = _as_traced([same], [x], [((4, 1), (1, 1))], [True])
    assert torch.equal(got, x) and got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    (kept,) = _as_traced([same], [x], [((4, 1), (1, 1))], [False])  # traced as a view of x: eager aliases too
    assert kept.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_two_outputs_in_one_buffer_are_parted():
    y = torch.randn(5)
    a, b = _as_traced([y, y], [], [((5,), (1,)), ((5,), (1,))], [True, True])
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr() and torch.equal(a, b)


def test_an_output_whose_strides_differ_is_laid_out_as_traced():
    t = torch.randn(3, 4)
    (got,) = _as_traced([t], [], [((3, 4), (1, 3))], [True])
    assert got.stride() == (1, 3) and torch.equal(got, t)
