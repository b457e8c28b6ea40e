"""Events for the analysis layer, and the reshape + in-place hazard (seed 957) matching eager exactly."""
import pytest
import torch

import compiler
from compiler.core import events as ev


def reshape_then_add(x):
    y = x.reshape(-1)
    y.add_(1)
    return y


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_reshape_inplace_matches_eager_side_effects(layout):
    def make():
        base = torch.arange(6.0).reshape(2, 3)
        return base if layout == "contiguous" else base.t()

    x_eager, x_jit = make(), make()
    expected = reshape_then_add(x_eager)
    got = compiler.jit(reshape_then_add)(x_jit)
    assert torch.equal(got, expected)
    assert torch.equal(x_jit, x_eager), "the input must change exactly when eager's reshape returned a view"
    assert torch.equal(x_jit, make() + 1) == (layout == "contiguous")


def test_layout_change_recompiles_and_stays_eager_identical():
    jf = compiler.jit(reshape_then_add)
    a = torch.zeros(2, 3)
    jf(a)
    b = torch.zeros(3, 2).t()
    jf(b)
    assert compiler.cache_misses(jf) == 2
    assert torch.equal(a, torch.ones(2, 3)) and torch.equal(b, torch.zeros(2, 3))


@pytest.mark.parametrize("layout, view", [("contiguous", True), ("transposed", False)])
def test_inplace_on_may_view_event_says_what_happened(layout, view):
    seen = []
    jf = compiler.jit(reshape_then_add, observers=[seen.append])
    x = torch.zeros(2, 3) if layout == "contiguous" else torch.zeros(3, 2).t()
    jf(x)
    kinds = [e.kind for e in seen]
    (event,) = [e for e in seen if e.kind == ev.INPLACE_ON_MAY_VIEW]
    assert event.op == "Tensor.add_" and event.details["view_op"] == "Tensor.reshape"
    assert event.details["returned_view"] is view and event.details["reaches_input"] is view
    assert event.location.lineno == reshape_then_add.__code__.co_firstlineno + 2
    assert event.details["view_location"].lineno == reshape_then_add.__code__.co_firstlineno + 1
    assert (ev.INPLACE_ON_INPUT in kinds) is view
    assert compiler.last_events(jf) == seen


@pytest.mark.parametrize("spell", ["setitem", "iadd", "out", "contiguous", "flatten", "to"])
def test_every_inplace_spelling_is_reported(spell):
    def fn(x):
        if spell == "contiguous":
            y = x.contiguous()
        elif spell == "to":
            y = x.to(torch.float32)
        else:
            y = x.flatten() if spell == "flatten" else x.reshape(6)
        if spell == "setitem":
            y[0] = 5.0
        elif spell == "iadd" or spell in ("contiguous", "flatten", "to"):
            y += 1
        else:
            torch.mul(y, 2, out=y)
        return y

    seen = []
    x = torch.zeros(2, 3)
    expected_x = torch.zeros(2, 3)
    expected = fn(expected_x)
    got = compiler.jit(fn, observers=[seen.append])(x)
    assert torch.equal(got, expected) and torch.equal(x, expected_x)
    may_view = [e for e in seen if e.kind == ev.INPLACE_ON_MAY_VIEW]
    assert len(may_view) == 1 and may_view[0].details["reaches_input"]


def test_inplace_on_a_fresh_tensor_is_not_reported():
    seen = []
    compiler.jit(lambda x: (x * 2).add_(1), observers=[seen.append])(torch.ones(2))
    assert not [e for e in seen if e.kind in (ev.INPLACE_ON_INPUT, ev.INPLACE_ON_MAY_VIEW)]


def test_view_of_input_mutation_is_reported():
    seen = []

    def fn(x):
        x[0].mul_(3)
        return x

    x = torch.ones(2, 2)
    compiler.jit(fn, observers=[seen.append])(x)
    (event,) = [e for e in seen if e.kind == ev.INPLACE_ON_INPUT]
    assert event.details == {"input": "args[0]", "through_view": True}
    assert torch.equal(x, torch.tensor([[3.0, 3.0], [1.0, 1.0]]))


G = torch.ones(3)


def test_captured_tensor_is_an_input_held_by_reference():
    seen = []
    jf = compiler.jit(lambda x: x + G, observers=[seen.append])
    torch.testing.assert_close(jf(torch.ones(3)), torch.full((3,), 2.0))
    G.mul_(5)  # in-place change of the captured tensor is seen (it is passed, not baked)
    torch.testing.assert_close(jf(torch.ones(3)), torch.full((3,), 6.0))
    assert [e.kind for e in seen] == [ev.CAPTURED_TENSOR]
    G.fill_(1.0)


def test_observer_errors_propagate_before_any_result():
    def strict(event):
        if event.kind == ev.INPLACE_ON_MAY_VIEW:
            raise ValueError("rejected by observer")

    x = torch.zeros(6)
    with pytest.raises(ValueError, match="rejected by observer"):
        compiler.jit(reshape_then_add, observers=[strict])(x)
    assert torch.equal(x, torch.zeros(6)), "tracing runs nothing on real data"


def test_data_dependent_control_flow_is_an_event_with_the_value_read():
    seen = []

    def fn(x):
        if x.sum() > 0:
            return x
        return -x

    assert torch.equal(compiler.jit(fn, observers=[seen.append])(-torch.ones(2)), torch.ones(2))
    (event,) = [e for e in seen if e.kind == ev.DATA_DEPENDENT]
    assert event.location.lineno == fn.__code__.co_firstlineno + 1
    assert event.details["value"] is False and event.details["kind"] == "bool"


def test_a_jitted_function_called_while_tracing_is_inlined():
    inner = compiler.jit(lambda x: x * 2)
    outer = compiler.jit(lambda x: inner(x) + 1)
    torch.testing.assert_close(outer(torch.ones(2)), torch.full((2,), 3.0))
    assert compiler.cache_misses(inner) == 0
    assert "Tensor.__mul__" in str(compiler.last_traces(outer)[-1])
