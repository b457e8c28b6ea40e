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


# unsloth's int8 linear: the compiled function reads one key of a module dict, set once before the compile in the
# function that compiles; the caller counts calls under another key. Only the key read is an input of the trace.
KEYED_STATE = """\
import torch
_STATE: dict = {"fn": None}
def _rows(x):
    op = _STATE.get("op")
    return op(x) if op is not None else x.contiguous()
def compiled_rows(backend="inductor"):
    fn = _STATE["fn"]
    if fn is not None:
        return fn
    _STATE["op"] = torch.neg
    fn = _STATE["fn"] = torch.compile(_rows, backend=backend)
    return fn
def run(x):
    out = compiled_rows()(x)
    _STATE["calls"] = _STATE.get("calls", 0) + 1
    return out
"""


def _keyed_graphs(change_read_key: bool) -> int:
    ns: dict = {}
    exec(KEYED_STATE, ns)
    backend = CountingBackend()
    fn = ns["compiled_rows"](backend)
    for i in range(6):
        x = torch.randn(3)
        want = (torch.abs if change_read_key and i % 2 else torch.neg)(x)
        if change_read_key:
            ns["_STATE"]["op"] = torch.abs if i % 2 else torch.neg
        assert torch.equal(fn(x), want)
        ns["_STATE"]["calls"] = ns["_STATE"].get("calls", 0) + 1  # a new key after the first call, then counts
    return len(backend.graphs)


def test_a_module_dict_read_at_one_key_is_quiet_when_only_other_keys_change():
    assert "TL201" not in _codes(KEYED_STATE)
    assert _keyed_graphs(change_read_key=False) == 1  # 'calls' counting between calls recompiles nothing


def test_a_module_dict_read_at_one_key_that_changes_between_calls_is_reported_and_recompiles():
    changed = KEYED_STATE + "def use_abs():\n    _STATE['op'] = torch.abs\n"
    assert "TL201" in _codes(changed)
    assert _keyed_graphs(change_read_key=True) == 2  # one graph per function stored under the key read
