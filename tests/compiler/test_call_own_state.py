"""State a call makes or puts back is no reason to trace again (transformers' models hit the cache only so):
containers the call creates (`**kwargs`, `*args`), attributes and ContextVars set and put back before the call
ends, `os.environ` and `ContextVar.get` reads (guarded by value instead). And `torch.compiler.is_compiling()` is
True in traced code, as under torch.compile."""
from __future__ import annotations

import contextvars
import os

import pytest
import torch

import compiler
from eager_parity import CACHES, check_calls


def _calls(n=3):
    return [lambda: (torch.arange(3.0),)] * n


@pytest.mark.parametrize("cache", CACHES[:2])
def test_popping_the_kwargs_dict_hits_the_cache(cache):
    def f(x, **kw):
        kw.pop("flag", None)
        kw["extra"] = 1
        return x * 2 + len(kw)

    jf = compiler.jit(f, cache=cache)
    for _ in range(3):
        assert torch.equal(jf(torch.arange(3.0), flag=True, other=2), f(torch.arange(3.0), flag=True, other=2))
    assert (compiler.cache_hits(jf), compiler.cache_misses(jf)) == (2, 1)


def test_changing_a_list_made_from_star_args_hits_the_cache():
    def f(x, *rest):
        rest = list(rest)
        rest.append(3)
        return x * sum(rest)

    jf = check_calls(f, [lambda: (torch.ones(2), 1, 2)] * 3)
    assert compiler.cache_hits(jf) == 2


def test_a_list_argument_changed_in_place_is_still_refused():
    def f(x, lst):
        lst.append(1)
        return x * 2

    with pytest.raises(compiler.CompilerError):
        compiler.jit(f)(torch.ones(2), [])


@pytest.mark.parametrize("check", ["torch.compiler.is_compiling", "torch._dynamo.is_compiling",
                                   "torch._utils.is_compiling"])
def test_is_compiling_is_true_in_traced_code(check):
    import torch._dynamo  # noqa: F401 - (torch._dynamo.is_compiling)
    import warnings

    probe = eval(check)  # noqa: S307 - one of three fixed names

    def f(x):
        return x * 2 if probe() else x * 3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (torch._utils.is_compiling is deprecated)
        warnings.simplefilter("ignore", UserWarning)
        jf = compiler.jit(f)
        assert torch.equal(jf(torch.ones(2)), torch.full((2,), 2.0))
        assert not probe()  # eager: False, as under torch.compile
        assert torch.equal(f(torch.ones(2)), torch.full((2,), 3.0))


def test_is_compiling_under_torch_compile_agrees():
    """The claim compared with torch.compile itself (backend eager)."""
    def f(x):
        return x * 2 if torch.compiler.is_compiling() else x * 3

    assert torch.equal(torch.compile(f, backend="eager")(torch.ones(2)), compiler.jit(f)(torch.ones(2)))


class Holder:
    def __init__(self):
        self.active = None


HOLDER = Holder()


def test_an_attribute_set_and_put_back_hits_the_cache():
    def f(x):
        HOLDER.active = [x]  # (transformers' CompileableContextVar under is_compiling)
        try:
            return x * len(HOLDER.active)
        finally:
            HOLDER.active = None

    jf = check_calls(f, _calls())
    assert compiler.cache_hits(jf) == 2 and HOLDER.active is None


def test_an_attribute_left_changed_happens_on_every_call():
    def f(x):
        HOLDER.active = (HOLDER.active or 0) + 1
        return x * 2

    try:
        HOLDER.active = None
        jf = compiler.jit(f)
        for i in range(3):
            jf(torch.ones(2))
            assert HOLDER.active == i + 1
        assert compiler.cache_hits(jf) == 0
    finally:
        HOLDER.active = None


VAR = contextvars.ContextVar("thunder_lint_test_var", default=1)


def test_context_var_get_is_a_guarded_input():
    def f(x):
        return x * VAR.get()

    jf = compiler.jit(f)
    assert torch.equal(jf(torch.ones(2)), torch.ones(2))
    assert torch.equal(jf(torch.ones(2)), torch.ones(2))
    token = VAR.set(5)
    try:
        assert torch.equal(jf(torch.ones(2)), torch.full((2,), 5.0))
    finally:
        VAR.reset(token)
    assert torch.equal(jf(torch.ones(2)), torch.ones(2))
    assert (compiler.cache_hits(jf), compiler.cache_misses(jf)) == (2, 2)


def test_context_var_set_and_reset_in_the_call_hits_the_cache():
    def f(x):
        token = VAR.set(7)
        try:
            return x * VAR.get()
        finally:
            VAR.reset(token)

    jf = check_calls(f, _calls())
    assert compiler.cache_hits(jf) == 2 and VAR.get() == 1


def test_context_var_left_set_happens_on_every_call():
    def f(x):
        VAR.set(VAR.get() + 1)
        return x * 2

    ctx = contextvars.copy_context()

    def run():
        jf = compiler.jit(f)
        for i in range(3):
            jf(torch.ones(2))
            assert VAR.get() == i + 2
        assert compiler.cache_hits(jf) == 0

    ctx.run(run)


def test_environ_reads_are_guarded_by_value(monkeypatch):
    def f(x):
        return x * (2 if os.environ.get("THUNDER_LINT_TEST_FLAG") == "1" else 3)

    monkeypatch.delenv("THUNDER_LINT_TEST_FLAG", raising=False)
    jf = compiler.jit(f)
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 3.0))
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 3.0))
    monkeypatch.setenv("THUNDER_LINT_TEST_FLAG", "1")
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 2.0))
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 2.0))
    monkeypatch.setenv("THUNDER_LINT_TEST_FLAG", "0")
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 3.0))
    assert (compiler.cache_hits(jf), compiler.cache_misses(jf)) == (2, 3)


def test_environ_item_read_of_a_missing_key_raises_as_eager(monkeypatch):
    def f(x):
        return x * len(os.environ["THUNDER_LINT_TEST_FLAG"])

    monkeypatch.delenv("THUNDER_LINT_TEST_FLAG", raising=False)
    jf = compiler.jit(f)
    with pytest.raises(KeyError):
        jf(torch.ones(2))
    monkeypatch.setenv("THUNDER_LINT_TEST_FLAG", "ab")
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 2.0))
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 2.0))
    monkeypatch.setenv("THUNDER_LINT_TEST_FLAG", "abc")
    assert torch.equal(jf(torch.ones(2)), torch.full((2,), 3.0))
