"""Objects a call makes and stores on its module (a cache kept on self) are made again by every cached call, and
a module attribute the call writes before reading it is not guarded: the trace hits on call 2 (issue 37). An
attribute read before it is written (hasattr, getattr, `if self.cache is None`) keeps its guard: those re-trace
and stay equal to eager."""
from __future__ import annotations

import copy

import pytest
import torch

import compiler


class Box:
    def __init__(self, k):
        self.k = k
        self.n = 1


class StoresBox(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        self.box = Box(y * 2)
        return y


class StoresThenFills(torch.nn.Module):
    """Stored first, filled after (as a DynamicCache is updated layer by layer), and returned too."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        box = Box(None)
        self.box = box
        box.k = [self.lin(x)]
        box.k.append(box.k[0].relu())
        self.last = box.k[1].sum()
        return box, self.box.k[0] + 1


class ReadsFirst(torch.nn.Module):
    """What the call does depends on the slot it later writes: its guard stays."""

    def __init__(self, how):
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "hasattr":
            fresh = not hasattr(self, "box")
        elif self.how == "getattr":
            fresh = getattr(self, "box", None) is None
        else:
            fresh = "box" not in vars(self)
        self.box = Box(x + 1)
        return x * 2 if fresh else x * 3


def _same_box(a, b):
    assert type(a) is type(b) is Box and a.n == b.n
    ka, kb = (a.k, b.k) if isinstance(a.k, list) else ([a.k], [b.k])
    assert len(ka) == len(kb) and all(torch.equal(p, q) for p, q in zip(ka, kb))


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_an_object_stored_on_self_is_made_again_and_the_trace_hits(cache):
    model = StoresBox()
    eager = copy.deepcopy(model)
    jm = compiler.jit(model, cache=cache)
    boxes = []
    for i in range(4):
        x = torch.randn(2, 4)
        assert torch.equal(jm(x), eager(x))
        _same_box(model.box, eager.box)
        boxes.append(model.box)
    assert len({id(b) for b in boxes}) == 4  # a new object every call, as in eager
    assert (compiler.cache_hits(jm), compiler.cache_misses(jm)) == (3, 1)


def test_an_object_stored_then_filled_and_returned_is_one_object():
    model = StoresThenFills()
    eager = copy.deepcopy(model)
    jm = compiler.jit(model)
    for i in range(3):
        x = torch.randn(2, 4)
        (box, y), (ebox, ey) = jm(x), eager(x)
        assert box is model.box and ebox is eager.box
        _same_box(box, ebox)
        assert torch.equal(y, ey) and torch.equal(model.last, eager.last)
    assert (compiler.cache_hits(jm), compiler.cache_misses(jm)) == (2, 1)


def test_an_object_stored_on_self_through_inductor_hits():
    model = StoresThenFills()
    eager = copy.deepcopy(model)
    jm = compiler.jit(model, executors=("inductor", "torch"))
    for i in range(3):
        x = torch.randn(2, 4)
        (box, y), (ebox, ey) = jm(x), eager(x)
        _same_box(box, ebox)
        torch.testing.assert_close(y, ey)
    assert compiler.cache_hits(jm) == 2


@pytest.mark.parametrize("how", ["hasattr", "getattr", "vars"])
def test_a_slot_read_before_it_is_written_stays_guarded(how):
    model, eager = ReadsFirst(how), ReadsFirst(how)
    jm = compiler.jit(model)
    x = torch.ones(2)
    for i in range(3):
        assert torch.equal(jm(x), eager(x)), i
        _same_box(model.box, eager.box)
    assert compiler.cache_hits(jm) == 0  # (the box read is guarded: call 2 does not reuse call 1's trace)


def test_a_counter_read_before_it_is_written_still_re_traces():
    class Counts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    model, eager = Counts(), Counts()
    jm = compiler.jit(model)
    for i in range(3):
        x = torch.ones(2)
        assert torch.equal(jm(x), eager(x))
    assert compiler.cache_misses(jm) == 3


class StoresThenReads(torch.nn.Module):
    """A stored object changed after a read of a tensor's value (the trace splits into segments there)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        self.box = Box(y)
        if y.sum() > 0:
            self.box.k = y * 2
            return y + 1
        return y - 1


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")])
def test_an_object_stored_before_a_value_read_is_eager_s_on_both_outcomes(executors):
    model = StoresThenReads()
    eager = copy.deepcopy(model)
    jm = compiler.jit(model, executors=executors)
    for i in range(4):
        x = torch.randn(2, 4) * (1 if i % 2 else -1)
        torch.testing.assert_close(jm(x), eager(x))
        assert type(model.box) is Box
        torch.testing.assert_close(model.box.k, eager.box.k)  # (fused: float32 rounding may differ)
    assert compiler.cache_hits(jm) >= 2
