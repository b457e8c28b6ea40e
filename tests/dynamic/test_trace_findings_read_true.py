"""Trace findings that said something untrue, read in real sources (issue 24), each run under the compiler.

- plain slicing `x[:, :k]` made "specializes the trace on `x_shape0 >= 0`": a condition every size meets;
- a closure read named the compiler's type ("reads `total` (TensorProxy)");
- TL203/TL204 said the compiled function "skips" or "does not repeat" an effect that compiler.jit (which ran)
  does repeat: it traces such a function again on every call. The messages now say what compiler.jit did and
  what thunder and torch.compile do, as the rule's pattern table states (tests/rules/test_rule_compilers.py).
"""

from __future__ import annotations

import contextlib
import io

import torch

import analyzer
import compiler
from rules.compilers import HEADLINE_CHARS, prose_length


def test_plain_slicing_under_symbolic_values_names_no_condition_every_size_meets():
    def f(x, k: int):
        return x[:, :k] * 2

    found = analyzer.check(f, torch.randn(4, 8), 3)
    # no condition on the sizes alone (`x_shape0 >= 0`, `x_shape0 <= x_shape0`): every input meets those; the
    # sign of `k` does choose another slice (`x[:, :-1]`), and that one is reported
    assert [d.message.split(" specializes the trace on ")[1].split(":")[0] for d in found] == ["`k >= 0`"], found

    def g(x, k: int):  # a real decision on a size still is one
        if x.shape[0] > k:
            return x[:k]
        return x

    found = analyzer.check(g, torch.randn(4, 8), 3)
    assert any(d.code == "TL301" and "`x_shape0 > k`" in d.message for d in found), [d.message for d in found]


def test_a_captured_variable_written_during_the_call_is_named_by_its_user_type():
    def make():
        total = torch.zeros(1)

        def g(x):
            nonlocal total
            total = total + x.sum()
            return x + total

        return g

    found = analyzer.check(make(), torch.ones(3))
    assert found and all("Proxy" not in d.message for d in found), [d.message for d in found]


COUNTER = 0


def bump_and_print(x):
    global COUNTER
    COUNTER = COUNTER + 1
    print("step")
    return x + 1


def test_effects_are_described_as_compiler_jit_runs_them():
    global COUNTER
    found = {d.code: d.message for d in analyzer.check(bump_and_print, torch.ones(2))}
    assert set(found) == {"TL203", "TL204"}, found
    for message in found.values():
        assert "skips" not in message and "does not repeat this on later calls" not in message.split("\n")[0]
        assert "compiler.jit (which ran here) matches eager" in message
    # what the message says compiler.jit does, it does: the effect happens on every call
    COUNTER = 0
    jf = compiler.jit(bump_and_print)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for _ in range(3):
            jf(torch.ones(2))
    assert COUNTER == 3 and out.getvalue().count("step") == 3


def test_trace_headlines_are_short():
    def inplace(x):
        y = x.reshape(-1)
        y.add_(1)
        v = x[0]
        v.mul_(2)
        return x * 3

    found = analyzer.check(inplace, torch.ones(2, 3))
    assert {d.code for d in found} >= {"TL101", "TL103"}, [d.code for d in found]
    for d in found:
        assert prose_length(d.message.split("\n")[0]) <= HEADLINE_CHARS, d.message
