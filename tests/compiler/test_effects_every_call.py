"""Effects happen on every call, in eager's order: attribute writes on objects the function did not create
(a module in a global list), an exception eager raises from an op whose result nothing uses (passes must not
drop it), and in-place metadata changes made before the program raises."""
from __future__ import annotations

import pytest
import torch

import compiler
from eager_parity import CACHES, check_calls

MODELS = [torch.nn.Linear(2, 2)]


@pytest.mark.parametrize("cache", CACHES)
def test_attribute_writes_on_a_global_module_list_happen_on_every_call(cache):
    def fn(x):
        MODELS[0].training = False
        MODELS[0].abc = True
        return MODELS[0](x)

    jfn = compiler.jit(fn, cache=cache)
    try:
        with torch.no_grad():
            for _ in range(3):
                MODELS[0].training = True
                if hasattr(MODELS[0], "abc"):
                    del MODELS[0].abc
                jfn(torch.ones(2))
                assert MODELS[0].training is False and MODELS[0].abc is True
    finally:
        MODELS[0].train()
        vars(MODELS[0]).pop("abc", None)


def test_an_attribute_written_on_a_module_reached_only_at_run_time():
    class Holder:
        pass

    holder = Holder()
    holder.inner = [[torch.nn.Linear(2, 2)]]  # deeper than the static guards go

    def fn(x):
        holder.inner[0][0].calls = getattr(holder.inner[0][0], "calls", 0) + 1
        return x * 2

    jfn = compiler.jit(fn)
    for call in range(1, 4):
        jfn(torch.ones(2))
        assert holder.inner[0][0].calls == call


@pytest.mark.parametrize("cache", CACHES)
def test_an_unused_op_that_raises_is_not_dropped(cache):
    def fn(t, n):
        t.select(0, n)  # unused: its only effect is the IndexError eager raises for an index out of range
        return None

    calls = [lambda: (torch.ones(3, 2), 1), lambda: (torch.ones(2, 2), 1), lambda: (torch.ones(2, 2), 2),
             lambda: (torch.empty(0, 3), -1), lambda: (torch.ones(4, 2), 3)]
    check_calls(fn, calls, cache=cache)


def test_an_unused_index_select_with_indices_out_of_range_raises():
    def fn(x, i):
        torch.index_select(x, 0, i)
        return x + 1

    check_calls(fn, [lambda: (torch.ones(3), torch.tensor([0])), lambda: (torch.ones(3), torch.tensor([5]))])


def test_an_unused_integer_division_by_zero_raises():
    def fn(x, y):
        x // y
        return x

    check_calls(fn, [lambda: (torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64)),
                     lambda: (torch.ones(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64))])


def test_unused_elementwise_ops_are_still_dropped():
    def fn(x):
        unused = torch.exp(x) * 3  # noqa: F841 - cannot raise for the guarded metadata
        return x + 1

    jfn = compiler.jit(fn)
    jfn(torch.ones(2))
    assert "torch.exp" not in str(compiler.last_traces(jfn)[-1])


@pytest.mark.parametrize("cache", CACHES)
def test_in_place_metadata_changes_before_a_raise_stay(cache):
    def fn(x, n):
        x.t_()
        x.unsqueeze_(0)
        if n > 1:
            raise ValueError("raised by the program")
        if x.sum() > 100:
            raise IndexError("raised after a data-dependent read")
        return x.sum()

    def randn(seed):
        return torch.randn(2, 3, generator=torch.Generator().manual_seed(seed))

    calls = [lambda: (randn(0), 1), lambda: (randn(1), 2), lambda: (randn(2) + 100, 1), lambda: (randn(3), 1)]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_an_environment_variable_missing_then_set(cache):
    import os

    key = "THUNDER_LINT_TEST_EFFECTS_ENV"

    def fn(x):
        return x + 1 if os.environ.get(key) == "1" else x - 1

    jfn = compiler.jit(fn, cache=cache)
    os.environ.pop(key, None)
    try:
        for value in (None, "1", "0", "1"):
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
            check_calls(fn, [lambda: (torch.ones(2),)], jfn=jfn)
    finally:
        os.environ.pop(key, None)


@pytest.mark.parametrize("cache", CACHES)
def test_python_attributes_set_on_tensors(cache):
    def fn(x, flag):
        x.offloading = flag
        y = x + 10
        y.foo = 42
        return y, y.foo * 2, x.offloading

    jfn = check_calls(fn, [lambda: (torch.ones(3), True), lambda: (torch.ones(3), False)], cache=cache)
    x = torch.ones(3)
    y, _, _ = jfn(x, True)
    assert x.offloading is True and y.foo == 42


def test_writing_the_real_part_of_a_complex_tensor():
    def fn(x):
        x.real = torch.full((5,), 10.0)
        x.imag = 3.0
        return x + 1

    check_calls(fn, [lambda: (torch.ones(5, dtype=torch.cfloat),)] * 2)


class _LogsExpanded:
    def __init__(self):
        self.log = []


@pytest.mark.parametrize("cache", CACHES)
def test_an_in_place_op_on_an_expanded_argument_raises_before_later_effects(cache):
    holder = _LogsExpanded()

    def fn(a, n):
        a.clamp_(max=1)  # eager refuses: the elements share memory
        for _ in range(n):
            holder.log.append(a.sum())
        return a

    jfn = compiler.jit(fn, cache=cache)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="more than one element"):
            jfn(torch.ones(1, 3).expand(4, 3), 2)
    assert holder.log == []


@pytest.mark.parametrize("cache", CACHES)
def test_an_unused_reduction_over_an_empty_dim_raises(cache):
    def fn(x, n):
        v = torch.arange(n) * 1.0
        v.amax(0)  # unused: eager raises IndexError where n == 0
        x.max()
        return None

    check_calls(fn, [lambda: (torch.ones(2), 2), lambda: (torch.ones(2), 0), lambda: (torch.ones(0), 3)],
                cache=cache)


def test_copying_an_expanded_tensor_onto_itself_is_allowed_as_in_eager():
    def fn(a, n):
        v = a.expand(n, *a.shape)
        v.copy_(v)
        a.copy_(a)
        return v.sum()

    check_calls(fn, [lambda: (torch.ones(1, 3).expand(4, 3), 2), lambda: (torch.ones(3), 3)])


@pytest.mark.parametrize("cache", CACHES)
def test_an_unused_op_on_bools_the_meta_kernel_accepts_raises_first(cache):
    """torch.add of bool tensors with a float alpha: eager refuses it (the meta kernel does not check), so it is
    not dead code, and its error is the one eager raises, before a later op's."""
    def fn(a, s):
        torch.add(a, a, alpha=s)
        a.abs_()  # also refused for bools, later
        return a

    check_calls(fn, [lambda: (torch.ones(2, 2, dtype=torch.bool), 0.5)] * 2, cache=cache)


def test_an_unused_op_on_a_view_whose_base_was_written_raises():
    # Found by bench/fuzz.py (seed 333166): `chunk(a0)[-1] + n` after a write through another argument viewing
    # a0 raises in eager (autograd: a multi-output view whose base was modified in place); its unused result was
    # removed as dead code.
    def fn(a0, a1, n):
        v1 = a0.chunk(2)[-1]
        a1.mul_(0.5)
        v1 + n  # noqa: B018 - unused: only its error matters
        return a1

    def make():
        a0 = torch.randn(4, 5, 5, generator=torch.Generator().manual_seed(0)).requires_grad_() * 1
        return a0, a0.diagonal()

    with pytest.raises(RuntimeError, match="modified inplace"):
        fn(*make(), 2)
    with pytest.raises(RuntimeError, match="modified inplace"):
        compiler.jit(fn)(*make(), 2)
