"""Issue 31's hidden inputs and writes (TL201/TL203), linted and run under torch.compile on CPU.

The shapes the linter now reports (a class attribute changed between calls, a module-level dict written
inside compiled code, a nonlocal written by a helper the compiled function calls) are real state: torch.compile
gives eager's results by replaying the write and guarding what it reads, at the cost of a recompile (the message's
"a recompile whenever it changes"; automatic dynamic then makes the number symbolic).
"""

from __future__ import annotations

import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend


def _codes(src: str) -> set[str]:
    return {d.code for d in lint_source(src, "m.py")}


CLASS_ATTR = """\
import torch
class GlobalState:
    factor = 1.0
def f(x):
    return x * GlobalState.factor
g = torch.compile(f)
def train():
    for i in range(3):
        GlobalState.factor = i * 0.5
        g(torch.ones(2))
"""


def test_a_class_attribute_changed_between_calls_is_guarded_and_recompiles():
    assert "TL201" in _codes(CLASS_ATTR)
    ns: dict = {}
    exec(CLASS_ATTR, ns)
    backend = CountingBackend()
    g = torch.compile(ns["f"], backend=backend)
    got = []
    for factor in (1.0, 2.0, 2.0, 3.0):
        ns["GlobalState"].factor = factor
        got.append(g(torch.ones(2)).tolist())
    assert got == [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0], [3.0, 3.0]]  # the new value is used...
    # ...at the cost of a recompile: the first change recompiles, after which automatic dynamic makes the float
    # symbolic and the next values reuse that graph
    assert len(backend.graphs) == 2


STATS = """\
import torch
_stats = {"n": 0}
@torch.compile
def f(x):
    _stats["n"] += 1
    return x * 2
"""


def test_a_module_dict_written_in_compiled_code_is_replayed_each_call():
    assert "TL203" in _codes(STATS)
    stats = {"n": 0}

    def f(x):
        stats["n"] += 1
        return x * 2

    backend = CountingBackend()
    g = torch.compile(f, backend=backend)
    for _ in range(3):
        g(torch.ones(2))
    # the write happens on every call; the int it reads is guarded: one recompile, then it is dynamic
    assert stats["n"] == 3 and len(backend.graphs) == 2


NONLOCAL = """\
import torch
def make():
    count = 0
    def bump():
        nonlocal count
        count += 1
    @torch.compile
    def f(x):
        bump()
        return x * 2
    return f
"""


def test_a_nonlocal_written_by_a_called_helper_is_written_each_call():
    assert "TL203" in _codes(NONLOCAL)

    def make(backend):
        count = 0

        def bump():
            nonlocal count
            count += 1

        def f(x):
            bump()
            return x * 2

        return torch.compile(f, backend=backend), lambda: count

    backend = CountingBackend()
    g, read = make(backend)
    for _ in range(3):
        g(torch.ones(2))
    assert read() == 3 and len(backend.graphs) == 2  # written each call; the guarded cell recompiles once


CLASS_LIST = """\
import torch
class Recorder(torch.nn.Module):
    seen = []
    def forward(self, x):
        Recorder.seen.append(x)
        return x * 2
m = torch.compile(Recorder())
"""


def test_a_class_attribute_list_appended_in_compiled_forward_is_replayed_each_call():
    assert "TL203" in _codes(CLASS_LIST)

    class Recorder(torch.nn.Module):
        seen = []

        def forward(self, x):
            Recorder.seen.append(x)
            return x * 2

    backend = CountingBackend()
    m = torch.compile(Recorder(), backend=backend)
    for _ in range(3):
        m(torch.ones(2))
    # the append is replayed after every call (torch 2.13; pytorch #169253 lost it), and the list's length is
    # guarded: it grows on every call, so every call recompiles (the message's "a recompile whenever it changes")
    assert len(Recorder.seen) == 3 and len(backend.graphs) == 3
