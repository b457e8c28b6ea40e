"""Generators the interpreter does not drive (made outside the run), the run_for_real seam an embedder runs them
through, generators left behind once an embedder's run ended, and the default_read event (no torch here)."""
from __future__ import annotations

import contextlib

import pytest

from compiler.interpreter import Interpreter, InterpreterError, events as ev, run


def _counter(log):
    def gen():
        log.append("started")
        try:
            yield 1
            yield 2
        finally:
            log.append("finally")
    return gen


@pytest.mark.parametrize("how", ["next", "send", "method", "for", "list", "yield from"])
def test_advancing_a_generator_made_outside_goes_through_run_outside_once(how):
    log, calls = [], []
    outside = _counter(log)()

    def relay(g):
        yield from g

    def f(g):
        if how == "next":
            return next(g)
        if how == "send":
            next(g)
            return g.send(None)
        if how == "method":
            return g.__next__()
        if how == "for":
            return [v for v in g]  # (the comprehension's FOR_ITER)
        if how == "list":
            return list(g)
        return list(relay(g))

    def run_outside(fn, args, kwargs):
        calls.append(fn)
        return fn(*args, **kwargs)

    recorded = []
    interp = Interpreter((recorded.append,))
    interp.run_outside = run_outside
    value, _ = interp.call(None, f, (outside,), {}, [None], {})
    expected = {"next": 1, "send": 2, "method": 1}.get(how, [1, 2])
    assert value == expected
    assert log.count("started") == 1  # its code ran once, natively
    assert calls, "the generator's steps went through run_outside"
    marked = [e for e in recorded if e.kind == ev.OPAQUE_CALL and e.details.get("for_real")]
    assert len(marked) == len(calls) and "generator made outside" in marked[0].details["for_real"]


def test_contextmanager_made_outside_entered_inside_without_an_embedder():
    log = []

    @contextlib.contextmanager
    def cm():
        log.append("enter")
        yield 5
        log.append("exit")

    c = cm()
    traced = run(lambda c: c.__enter__() + 1, (c,))
    assert traced.value == 6 and log == ["enter"]
    c.__exit__(None, None, None)  # the generator goes on from where the interpreted call left it
    assert log == ["enter", "exit"]


def test_generators_made_by_an_ended_run_do_not_run_on():
    log = []
    gen = _counter(log)

    def f():
        g = gen()
        next(g)
        return g

    interp = Interpreter()
    g, _ = interp.call(None, f, (), {}, [], {})
    assert log == ["started"]
    interp.ended = True
    with pytest.raises(InterpreterError, match="resumed after the run ended"):
        next(g)
    g2, _ = interp.call(None, f, (), {}, [], {})
    g2.close()  # (a finalizer's close: ends it without running its finally on the run's values)
    assert log == ["started", "started"]


def test_default_read_reported_once_per_function():
    def helper(x, k=2, *, s=1):
        return x * k + s

    def f(x):
        return helper(x) + helper(x, 3) + helper(x, s=0)

    traced = run(f, (1,))
    assert traced.value == 3 + 4 + 2
    reads = [e for e in traced.events if e.kind == ev.DEFAULT_READ]
    assert [e.value for e in reads] == [helper]


def test_no_default_read_when_every_parameter_is_passed():
    def helper(x, k=2):
        return x * k

    traced = run(lambda x: helper(x, 5), (1,))
    assert traced.value == 5 and not [e for e in traced.events if e.kind == ev.DEFAULT_READ]
