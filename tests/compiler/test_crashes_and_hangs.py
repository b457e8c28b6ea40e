"""Programs eager runs that crashed or hung the compiler: lazy modules, Tensor.type with a tensor type or its
name, torch.vmap (over in-place ops, over a function closing over traced tensors), torch.tensor of one-element
tensors, and exception __context__ cycles (CPython's own "no hang" cases: the interpreter must end where
CPython does)."""
from __future__ import annotations

import contextlib

import pytest
import torch

import compiler
from eager_parity import CACHES, check_calls
from test_differential import assert_same


def _lazy_pair(make):
    torch.manual_seed(0)
    a = make()
    torch.manual_seed(0)
    b = make()
    return a, b


@pytest.mark.parametrize("cache", CACHES)
def test_lazy_modules_jitted(cache):
    model, eager = _lazy_pair(lambda: torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.ReLU(),
                                                           torch.nn.LazyLinear(2)))
    jmodel = compiler.jit(model, cache=cache)
    for seed in range(3):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(seed))
        torch.manual_seed(seed)  # (the first call draws the initial weights)
        got = jmodel(x)
        torch.manual_seed(seed)
        assert_same(got, eager(x), where=f"call {seed}")


def test_a_lazy_module_reached_as_a_global():
    global _LAZY
    _LAZY, eager = _lazy_pair(lambda: torch.nn.LazyLinear(3))

    def fn(x):
        return _LAZY(x) * 2

    jfn = compiler.jit(fn)
    for _ in range(2):
        torch.manual_seed(1)
        got = jfn(torch.ones(2, 4))
        torch.manual_seed(1)
        assert_same(got, eager(torch.ones(2, 4)) * 2, where="a lazy global module")


_LAZY = None


@pytest.mark.parametrize("dst", [torch.HalfTensor, "torch.DoubleTensor", torch.half, torch.FloatTensor])
def test_tensor_type_with_a_tensor_type_or_its_name(dst):
    def fn(x):
        return x.type(dst) * 2, x.type()

    check_calls(fn, [lambda: (torch.ones(2, 3),), lambda: (torch.ones(2, 3),)])


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
@pytest.mark.parametrize("cache", CACHES)
def test_vmap_over_in_place_ops(cache, executors):
    # (inductor under symbolic values traces the execution trace again per call's sizes, where the vmap symbol's
    # own function met proxies: bench/dynamo_port.py vmap_in_place)
    def fn(x):
        return torch.vmap(lambda row: row.add_(1))(x)

    check_calls(fn, [lambda: (torch.ones(2, 3),), lambda: (torch.zeros(2, 3),), lambda: (torch.ones(4, 3),)],
                cache=cache, executors=executors)


def test_vmap_over_a_function_closing_over_traced_tensors_with_gradients():
    def fn(x, w):
        return torch.vmap(lambda col: (col * w).sum(), in_dims=1)(x * 2)

    check_calls(fn, [lambda: (torch.arange(12.0).reshape(3, 4), torch.ones(3))] * 2)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(3)
    compiler.jit(fn)(x, w).sum().backward()
    got, x.grad = x.grad, None
    fn(x, w).sum().backward()
    assert_same(got, x.grad, where="gradient through vmap")


def test_torch_tensor_of_one_element_tensors():
    def fn(t, u):
        return torch.tensor([t, t]), torch.tensor([t.sum(), u.max()])

    check_calls(fn, [lambda: (torch.tensor([1.5]), torch.tensor([[2.0]]))] * 2)


def _cycle_through_a_reraise(x):
    try:
        try:
            raise ValueError("a")
        except ValueError as a:
            try:
                raise TypeError("b")
            except TypeError as b:
                a.__context__ = b
                raise a
    except ValueError:
        pass
    return x + 1


def _cycle_of_three(x):
    class A(Exception):
        pass

    class B(Exception):
        pass

    class C(Exception):
        pass

    try:
        try:
            raise A
        except A as a_:
            a = a_
            try:
                raise B
            except B as b_:
                b = b_
                try:
                    raise C
                except C as c_:
                    c = c_
                    a.__context__ = c
                    c.__context__ = b
                    b.__context__ = a
                    raise c
    except C:
        pass
    return x * 2


def _an_exception_that_is_its_own_context(x):
    def cycle():
        try:
            raise ValueError(1)
        except ValueError as ex:
            ex.__context__ = ex
            raise TypeError(2)

    try:
        cycle()
    except TypeError as e:
        assert isinstance(e.__context__, ValueError)
    return x - 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fn", [_cycle_through_a_reraise, _cycle_of_three, _an_exception_that_is_its_own_context])
def test_exception_context_cycles_do_not_hang(fn):
    check_calls(fn, [lambda: (torch.ones(2),)] * 2)


def test_a_meta_kernel_stricter_than_eager_is_a_clear_refusal():
    def fn(x):
        picked = x[x.float() < 0]  # nothing picked: an empty bool tensor
        return torch.randn_like(picked)  # eager accepts an empty bool tensor; the meta kernel does not

    eager = fn(torch.ones(3, dtype=torch.bool))
    assert eager.numel() == 0
    with pytest.raises(compiler.UnsupportedOpError, match="meta kernel of torch.randn_like refuses"):
        compiler.jit(fn)(torch.ones(3, dtype=torch.bool))


# Found by bench/aliasing_fuzz.py (seeds 1729, 3400, 3941, 909): the real-kernel check of in-place writes
# into overlapping memory modelled arguments that share memory as separate tensors, and every tensor as an
# autograd view.
def _expanded(requires_grad=False):
    base = torch.arange(1.0, 4.0).reshape(1, 3)
    if requires_grad:
        base = base.requires_grad_() * 1  # (a non-leaf)
    return base.expand(4, 3)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("case", ["copy onto itself through another argument", "item of an expanded argument",
                                  "detach_ of a detached view"])
def test_in_place_writes_into_overlapping_memory_eager_allows(case, cache):
    def onto_itself(a0, a1):
        a1.copy_(a0)  # the same memory, sizes and strides: eager's copy_ does nothing
        return a0 + a1

    def item(a0, a2):
        a2[0] = a0  # (a2 expands a0, itself one element expanded: a copy onto itself)
        return a2.sum()

    def detach_view(a0):
        v = a0.squeeze().detach()
        v.detach_()  # a detached tensor is no autograd view, even where its elements overlap
        return v * 2

    if case == "copy onto itself through another argument":
        fn, make = onto_itself, lambda: (lambda a: (a, a.view(-1, 3)))(_expanded())
    elif case == "item of an expanded argument":
        fn, make = item, lambda: (lambda a: (a, a.expand(2, 3)))(torch.tensor([2.0]).expand(3))
    else:
        fn, make = detach_view, lambda: (_expanded(requires_grad=True),)
    check_calls(fn, [make, make], cache=cache)


def test_in_place_write_into_a_view_made_before_requires_grad_is_refused_or_eager():
    def fn(a0):
        v = a0.as_strided((2,), (1,))
        a0.requires_grad_()  # eager: `v` views the tensor a0 views, which requires no grad
        v.div_(2)
        return a0

    def make():
        return (torch.arange(6.0)[::2],)

    eager_args, args = make(), make()
    expected = fn(*eager_args)
    try:
        got = compiler.jit(fn)(*args)
    except compiler.CompilerError as e:  # a clear refusal, naming the op
        assert "div_" in str(e)
        return
    assert_same(got, expected, where="result")


@pytest.mark.parametrize("cache", CACHES)
def test_new_outcome_after_an_in_place_transpose_of_an_expanded_non_leaf_argument(cache):
    # Found by bench/fuzz.py (seed 204782): re-tracing for a new outcome makes a stand-in with the layout the
    # call found; for a non-leaf with overlapping strides it copied into an expanded tensor and raised.
    def fn(a0, n):
        a0.t_()
        if a0.sum() > n:  # a data read: a new outcome re-traces after t_ already ran
            return a0 + 1
        return a0 - 1

    def make(n):
        return lambda: (_expanded(requires_grad=True), n)

    check_calls(fn, [make(-100.0), make(100.0), make(-100.0)], cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_a_refusal_inside_try_except_is_not_the_programs_exception(cache):
    # A compiler refusal is a RuntimeError: the program's own `except RuntimeError` took it for eager's error and
    # went down its fallback branch (here: zeros where eager returns bincount's counts).
    def fn(x):
        try:
            y = torch.bincount(x)  # no meta kernel: refused
        except RuntimeError:
            y = x * 0
        return y

    with pytest.raises(compiler.CompilerError, match="bincount"):
        compiler.jit(fn, cache=cache)(torch.tensor([1, 2, 2]))


_EXITS = []


class _Recorder:
    def __enter__(self):
        _EXITS.append("enter")
        return self

    def __exit__(self, *exc):
        _EXITS.append("exit")
        return False


@pytest.mark.parametrize("cache", CACHES)
def test_a_refusal_runs_the_programs_finally_blocks_and_with_exits(cache):
    # A refusal may not be caught by the program (the test above), but on its way out finally blocks and
    # with-blocks' __exit__ run, as for any exception eager raises there: they restore state (a lock, a torch
    # function mode torch popped for a call). Neither a bare `except:` nor contextlib.suppress swallows it.
    def fn(x):
        with _Recorder():
            try:
                with contextlib.suppress(RuntimeError):
                    try:
                        y = torch.bincount(x)  # no meta kernel: refused
                    except:  # noqa: E722
                        y = x * 0
            finally:
                _EXITS.append("finally")
        return y

    _EXITS.clear()
    with pytest.raises(compiler.CompilerError, match="bincount"):
        compiler.jit(fn, cache=cache)(torch.tensor([1, 2, 2]))
    assert _EXITS == ["enter", "finally", "exit"]


def test_a_refusal_inside_torchs_handle_torch_function_keeps_the_mode_stack():
    # torch.Tensor.__pow__ called by name runs torch's Python wrapper, whose handle_torch_function pops the
    # tracing mode in a `with` block; a refusal raised inside it skipped the exit that pushes it back
    # ("trying to pop from empty mode stack" where eager runs)
    def fn(a, b):
        try:
            return torch.Tensor.__pow__(a, 2) + b
        except RuntimeError:
            return a

    base = torch.rand(4, requires_grad=True) * 1
    # (a view made by slicing is modelled now, meta tensors viewing one base; a detached view is not: refused)
    with pytest.raises(compiler.CompilerError, match="share memory"):
        compiler.jit(fn)(base, base.detach()[1:2])
    assert torch._C._len_torch_function_stack() == 0
    assert torch.equal(compiler.jit(fn)(base, base[1:2]), fn(base, base[1:2]))
    check_calls(fn, [lambda: (torch.ones(3), torch.ones(3))])


def test_views_of_arguments_sharing_memory_inside_try_except_are_refused_or_eager():
    # Found by bench/fuzz.py (seed 331200): with `a1 = a0.diagonal()` requiring grad, `a1.fill_` makes eager's
    # later `v2.view(...)` of a split of a0 raise (a multi-output view whose base was written), which the
    # program catches; the trace, whose arguments do not share memory, took the other branch.
    def fn(a0, a1):
        v1, v2 = a0.split([1, a0.shape[0] - 1], 0)
        a1.fill_(0.5)
        try:
            v = v2.view(-1, 2)
        except RuntimeError:
            v = a0 * 1
        return v

    def make():
        a0 = (torch.arange(8.0).reshape(4, 2).requires_grad_() * 1)
        return a0, a0.diagonal()

    eager_args, args = make(), make()
    expected = fn(*eager_args)
    try:
        got = compiler.jit(fn)(*args)
    except compiler.CompilerError as e:
        assert "share memory" in str(e)
        return
    assert_same(got, expected, where="result")


@pytest.mark.parametrize("cache", CACHES)
def test_an_in_place_index_fill_of_an_empty_tensor_raises_eagers_exception(cache):
    # Found by bench/fuzz.py (seed 758853): eager's index_fill_ of an empty tensor raises a RuntimeError (setStorage
    # out of bounds for its storage of size 0); the meta kernel an IndexError, and the real-kernel check, run on a
    # rebuilt tensor given one element of storage, did not raise at all, so the meta's type was kept.
    def fn(n, s):
        v = torch.full((n,), n)
        v.index_fill_(0, torch.tensor([0]), s)
        return n

    check_calls(fn, [lambda: (3, 2.5), lambda: (0, 2.5), lambda: (2, 1.5)], cache=cache)
