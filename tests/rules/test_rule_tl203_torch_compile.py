"""TL203's claims about a captured object written by code of the enclosing function, run under torch.compile (CPU).

The rule says torch.compile "replays the write after every call" when a nested function of the enclosing
function makes it, and "drops the write" when a method of a class defined there, instantiated inside the
compiled code, makes it (pytorch #197896). Both programs are linted (reported, with that note) and run three times
compiled: the captured container must hold what eager would (3 updates) or nothing.
"""

from __future__ import annotations

import pytest
import torch

from analyzer.static import lint_source
from rules.tl203_captured_write import DROPPED_TORCH_COMPILE, REPLAYED_TORCH_COMPILE

FUNCTION = """\
import torch
def make():
    state = {"n": 0}
    def touch():
        state["n"] += 1
    @torch.compile(backend="eager", fullgraph=True)
    def step(x):
        touch()
        return x + 1
    return step, state
"""
METHOD = FUNCTION.replace("    def touch():\n        state", "    class Touch:\n        def touch(self):\n            state") \
    .replace("        touch()\n", "        Touch().touch()\n")


@pytest.mark.parametrize("source, note, updates", [(FUNCTION, REPLAYED_TORCH_COMPILE, 3), (METHOD, DROPPED_TORCH_COMPILE, 0)],
                         ids=["nested function", "method of a local class"])
def test_the_write_is_reported_with_what_torch_compile_does(source, note, updates):
    found = [d for d in lint_source(source, "m.py") if d.code == "TL203"]
    assert len(found) == 1 and f"torch.compile {note}" in found[0].message, [d.message for d in found]
    assert "state[\"n\"] += 1" in source.splitlines()[found[0].line - 1]
    ns = {}
    exec(compile(source, "<tl203>", "exec"), ns)
    torch._dynamo.reset()
    step, state = ns["make"]()
    for _ in range(3):
        assert torch.equal(step(torch.ones(2)), torch.full((2,), 2.0))
    assert state["n"] == updates
