"""Every piece of state a trace read is guarded (or the trace is single-use): contents of containers reached
through closures and globals (sets too), function objects (defaults, kwdefaults, attributes), modules reached as
globals or closures (plain attributes, parameters replaced, the order of parameters/buffers/submodules, an
instance-level forward), and torch's global switches (the default dtype, sdpa backends, deterministic
algorithms, matmul precision), at the call and inside the function. Each case changes the state between two
calls; the second compiled call must equal eager's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import compiler
from eager_parity import CACHES, check_calls
from test_differential import assert_same


def _same_after_change(fn, change, *args, cache="constant values"):
    jfn = compiler.jit(fn, cache=cache)
    assert_same(jfn(*args), fn(*args), where="before the change")
    change()
    assert_same(jfn(*args), fn(*args), where="after the change")


@pytest.mark.parametrize("cache", CACHES)
def test_a_captured_set_that_grows(cache):
    seen = {1, 2}

    def fn(x):
        return x * len(seen) + (1 if 3 in seen else 0)

    _same_after_change(fn, lambda: seen.add(3), torch.ones(2), cache=cache)


def test_a_global_set_of_objects():
    marker = object()
    registry = {marker}

    def fn(x):
        return x * len(registry)

    _same_after_change(fn, lambda: registry.add(object()), torch.ones(2))


def test_a_tuple_holding_a_list():
    config = ([1.0, 2.0], "mode")

    def fn(x):
        return x * config[0][1]

    _same_after_change(fn, lambda: config[0].__setitem__(1, 5.0), torch.ones(2))


def test_function_defaults_replaced():
    def helper(x, y=torch.ones(2), *, scale=2.0):
        return x * scale + y

    def fn(x):
        return helper(x)

    _same_after_change(fn, lambda: setattr(helper, "__defaults__", (torch.full((2,), 5.0),)), torch.ones(2))
    _same_after_change(fn, lambda: setattr(helper, "__kwdefaults__", {"scale": 7.0}), torch.ones(2))


def test_a_default_tensor_mutated_in_place_by_the_function():
    def helper(x, acc=torch.zeros(2)):
        acc.add_(x)
        return acc * 1

    def fn(x):
        return helper(x)

    eager_default = torch.zeros(2)

    def eager(x, acc=eager_default):
        acc.add_(x)
        return acc * 1

    jfn = compiler.jit(fn)
    for _ in range(2):
        assert_same(jfn(torch.ones(2)), eager(torch.ones(2)), where="the default accumulates")
    helper.__defaults__ = (torch.zeros(2),)
    eager.__defaults__ = (torch.zeros(2),)
    assert_same(jfn(torch.ones(2)), eager(torch.ones(2)), where="after the default is replaced")


def test_a_function_attribute():
    def gate(x):
        return x + 1 if gate.enabled else x - 1

    gate.enabled = True

    def fn(x):
        return gate(x) * 2

    _same_after_change(fn, lambda: setattr(gate, "enabled", False), torch.ones(2))


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.multiplier = 10
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x) * self.multiplier


def test_a_global_modules_plain_attribute():
    model = _Scaled()

    def fn(x):
        return model(x)

    with torch.no_grad():
        _same_after_change(fn, lambda: setattr(model, "multiplier", 11), torch.ones(2))


def test_a_closure_modules_parameter_replaced_and_training_flag():
    model = _Scaled().eval()

    def fn(x):
        return F.dropout(model(x), 0.5, training=model.training)

    with torch.no_grad():
        _same_after_change(fn, lambda: setattr(model.lin, "weight", torch.nn.Parameter(torch.zeros(2, 2))),
                           torch.ones(2))
        torch.manual_seed(0)
        jfn = compiler.jit(fn)
        model.eval()
        assert_same(jfn(torch.ones(2)), fn(torch.ones(2)), where="eval")
        model.train()
        torch.manual_seed(1)
        got = jfn(torch.ones(2))
        torch.manual_seed(1)
        assert_same(got, fn(torch.ones(2)), where="train")


def test_the_order_of_parameters_buffers_and_submodules():
    holder = torch.nn.Module()
    holder.register_parameter("a", torch.nn.Parameter(torch.ones(2)))
    holder.register_parameter("b", torch.nn.Parameter(torch.full((2,), 2.0)))
    holder.register_buffer("u", torch.full((2,), 3.0))
    holder.register_buffer("v", torch.full((2,), 4.0))

    def fn(x):
        params, buffers = list(holder.parameters()), list(holder.buffers())
        return x * params[0] - params[1] + buffers[0] * 10 - buffers[1]

    def reorder():
        for store in (holder._parameters, holder._buffers):
            first = next(iter(store))
            store[first] = store.pop(first)

    with torch.no_grad():
        _same_after_change(fn, reorder, torch.ones(2))


def test_an_instance_level_forward_monkeypatched():
    lin = torch.nn.Linear(2, 2)

    def fn(x):
        return lin(x)

    with torch.no_grad():
        _same_after_change(fn, lambda: setattr(lin, "forward", lambda x: x * 100), torch.ones(2))


def test_the_jitted_modules_instance_forward_monkeypatched():
    lin = torch.nn.Linear(2, 2)
    jlin = compiler.jit(lin)
    with torch.no_grad():
        assert_same(jlin(torch.ones(2)), lin(torch.ones(2)), where="before")
        lin.forward = lambda x: x * 100
        assert_same(jlin(torch.ones(2)), lin(torch.ones(2)), where="after")


@pytest.mark.parametrize("cache", CACHES)
def test_set_default_dtype_inside_the_function(cache):
    def fn(x):
        torch.set_default_dtype(torch.float64)
        t = torch.tensor([1j]) * x.sum()
        z = torch.zeros(2)
        torch.set_default_dtype(torch.float32)
        return t, z, torch.ones(1)

    check_calls(fn, [lambda: (torch.ones(2),)] * 3, cache=cache)
    assert torch.get_default_dtype() is torch.float32


def test_set_default_dtype_left_changed_as_eager_leaves_it():
    def fn(x):
        torch.set_default_dtype(torch.float64)
        return torch.ones(2) + x

    jfn = compiler.jit(fn)
    try:
        for _ in range(2):
            out = jfn(torch.ones(2))
            assert out.dtype is torch.float64 and torch.get_default_dtype() is torch.float64
            torch.set_default_dtype(torch.float32)
    finally:
        torch.set_default_dtype(torch.float32)


def test_sdpa_kernel_inside_the_function():
    def fn(q):
        with sdpa_kernel([]):  # no backend allowed: eager raises
            return F.scaled_dot_product_attention(q, q, q)

    def math_only(q):
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, q, q)

    q = torch.randn(1, 2, 4, 8)
    check_calls(fn, [lambda: (q.clone(),)] * 2)
    check_calls(math_only, [lambda: (q.clone(),)] * 2)
    assert torch.backends.cuda.math_sdp_enabled() and torch.backends.cuda.flash_sdp_enabled()


def test_switches_at_the_call_are_guarded():
    def fn(x, i):
        return x.index_add(0, i, torch.ones(2, 3))

    jfn = compiler.jit(fn)
    args = (torch.zeros(3, 3), torch.tensor([0, 0]))
    jfn(*args)
    hits = compiler.cache_hits(jfn)
    torch.use_deterministic_algorithms(True)
    try:
        jfn(*args)
    finally:
        torch.use_deterministic_algorithms(False)
    assert compiler.cache_hits(jfn) == hits, "a trace made without deterministic algorithms served a call with them"
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        jfn(*args)
    finally:
        torch.set_float32_matmul_precision(previous)
    assert compiler.cache_hits(jfn) == hits


def test_deterministic_algorithms_switched_inside():
    def fn(x):
        torch.use_deterministic_algorithms(True)
        y = x * 2
        torch.use_deterministic_algorithms(False)
        return y, torch.are_deterministic_algorithms_enabled()

    check_calls(fn, [lambda: (torch.ones(2),)] * 2)
    assert not torch.are_deterministic_algorithms_enabled()


def test_set_default_dtype_is_recorded_under_the_native_front_end_too():
    from compiler.frontend.native import native_frontend

    def fn(x):
        torch.set_default_dtype(torch.float64)
        out = torch.zeros(2) + x
        torch.set_default_dtype(torch.float32)
        return out

    with pytest.warns(compiler.runtime.cache.NativeFrontendWarning):
        jfn = compiler.jit(fn, frontend=native_frontend)
    for _ in range(2):
        assert jfn(torch.ones(2)).dtype is torch.float64
    assert torch.get_default_dtype() is torch.float32 and compiler.cache_hits(jfn) == 1


def test_an_attribute_a_config_object_did_not_have_yet():
    class Cfg:
        def __init__(self):
            self.count = 3

    cfg = Cfg()

    def fn(x):
        if getattr(cfg, "just_add_7", False):
            return x + 7
        return x * cfg.count

    _same_after_change(fn, lambda: setattr(cfg, "just_add_7", True), torch.zeros(1))


def test_a_nonlocal_written_then_read_is_not_guarded_as_a_traced_value():
    out = []

    def build():
        result = None

        def fn(a):
            nonlocal result
            result = a * 10
            out.append(result + 1)
            return result

        return fn

    jfn = compiler.jit(build())
    for _ in range(2):
        assert_same(jfn(torch.ones(2)), torch.full((2,), 10.0), where="result")
    assert len(out) == 2 and all(type(t) is torch.Tensor for t in out)
