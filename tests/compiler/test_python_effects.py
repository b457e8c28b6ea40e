"""Python effects and values from outside the program, through compiler.jit's interpreting front end:
every call must see what eager sees (issue: never a stale cached trace), and a refused call must leave
globals and cells as they were. Each case runs eagerly and jitted from the same starting state."""
import contextvars
import os
import random
import time

import pytest
import torch

import compiler

COUNT = 0
SEEN = []
SCALE = 2.0
_VAR = contextvars.ContextVar("thunder_lint_test_scale", default=1.0)


def _calls(fn, n=3):
    x = torch.ones(2)
    return [fn(x) for _ in range(n)]


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        torch.testing.assert_close(u, v, rtol=0, atol=0)


def counts_globally(x):
    global COUNT
    COUNT += 1
    return x * COUNT


def appends_to_a_global_list(x):
    SEEN.append(1)
    return x * len(SEEN)


def test_a_global_counter_counts_every_call_as_in_eager():
    global COUNT
    COUNT = 0
    eager = _calls(counts_globally)
    COUNT = 0
    jf = compiler.jit(counts_globally)
    _same(_calls(jf), eager)
    assert COUNT == 3 and compiler.cache_hits(jf) == 0  # re-traced every call: the write is Python's


def test_appending_to_a_global_list_happens_every_call():
    SEEN.clear()
    eager = _calls(appends_to_a_global_list)
    SEEN.clear()
    _same(_calls(compiler.jit(appends_to_a_global_list)), eager)
    assert len(SEEN) == 3


def test_the_issues_nonlocal_counter_does_not_fail_its_own_prologue():
    def make():
        i = 0

        def fn(x):
            nonlocal i
            i += 1
            return x * i
        return fn

    _same(_calls(compiler.jit(make())), _calls(make()))


def test_random_and_time_are_drawn_on_every_call():
    def fn(x):
        return x + random.random()

    random.seed(7)
    eager = _calls(fn)
    random.seed(7)
    _same(_calls(compiler.jit(fn)), eager)  # the same draws, in the same order

    def stamp(x):
        return x.double() * 0 + time.perf_counter()

    jf = compiler.jit(stamp)
    first, second = jf(torch.ones(1)), jf(torch.ones(1))
    assert second.item() > first.item() and compiler.cache_misses(jf) == 2


def test_a_context_variable_set_after_compiling_is_seen():
    def fn(x):
        return x * _VAR.get()

    jf = compiler.jit(fn)
    x = torch.ones(2)
    torch.testing.assert_close(jf(x), x)
    token = _VAR.set(5.0)
    try:
        torch.testing.assert_close(jf(x), fn(x))
    finally:
        _VAR.reset(token)


def test_an_environment_variable_changed_after_compiling_is_seen(monkeypatch):
    def fn(x):
        return x * float(os.environ["THUNDER_LINT_TEST_SCALE"])

    monkeypatch.setenv("THUNDER_LINT_TEST_SCALE", "2")
    jf = compiler.jit(fn)
    x = torch.ones(2)
    torch.testing.assert_close(jf(x), fn(x))
    monkeypatch.setenv("THUNDER_LINT_TEST_SCALE", "3")
    torch.testing.assert_close(jf(x), fn(x))

    def getenv(x):
        return x * float(os.getenv("THUNDER_LINT_TEST_SCALE", "1"))

    jg = compiler.jit(getenv)
    torch.testing.assert_close(jg(x), getenv(x))
    monkeypatch.delenv("THUNDER_LINT_TEST_SCALE")
    torch.testing.assert_close(jg(x), getenv(x))


def test_print_runs_on_every_call(capsys):
    def fn(x):
        print("step")
        return x + 1

    jf = compiler.jit(fn)
    _calls(jf)
    assert capsys.readouterr().out == "step\n" * 3


class Scaler(torch.nn.Module):
    def forward(self, x):
        return self.scaled(x)  # a global read only reachable through an attribute: found at run time

    def scaled(self, x):
        return x * SCALE


def test_a_global_read_in_a_method_reached_through_self_is_guarded():
    global SCALE
    model = Scaler()
    jm = compiler.jit(model)
    x = torch.ones(2)
    old = SCALE
    try:
        torch.testing.assert_close(jm(x), model(x))
        SCALE = 7.0
        torch.testing.assert_close(jm(x), model(x))
        assert compiler.cache_misses(jm) == 2
    finally:
        SCALE = old


def test_a_refused_trace_puts_back_the_globals_and_cells_it_wrote():
    def fn(x):
        global COUNT
        COUNT = 99
        return torch.geqrf(x)  # not supported (no meta kernel): the call is refused

    global COUNT
    COUNT = 1
    with pytest.raises(compiler.UnsupportedOpError):
        compiler.jit(fn)(torch.randn(3, 3))
    assert COUNT == 1

    def make():
        state = "before"

        def inner(x):
            nonlocal state
            state = "after"
            return torch.geqrf(x)
        return inner, lambda: state

    inner, read = make()
    with pytest.raises(compiler.UnsupportedOpError):
        compiler.jit(inner)(torch.randn(3, 3))
    assert read() == "before"


def test_pure_python_keeps_the_cache():
    import math

    def fn(x, n):
        scale = math.sqrt(n) + len([1, 2]) + max(n, 3)
        return torch.nn.functional.gelu(x) * scale

    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    jf, jm = compiler.jit(fn), compiler.jit(mlp)
    x = torch.randn(3, 4)
    for _ in range(3):
        torch.testing.assert_close(jf(x, 4), fn(x, 4))
        torch.testing.assert_close(jm(x), mlp(x))
    assert compiler.cache_hits(jf) == 2 and compiler.cache_hits(jm) == 2
