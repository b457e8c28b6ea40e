"""A trace split at a data-dependent read fuses each segment through the chosen executors (before, segments ran
op by op while the header named inductor), and every execution trace's header says what ran where."""
from __future__ import annotations

import torch

import compiler


def branchy(x):
    y = (x.sin() * 2 + 1).cos()
    if y.sum() > 0:  # a read of a tensor value: the trace is split here
        return (y * 3).exp() + 1
    return y - 1


def test_each_segment_runs_fused_regions_and_equals_eager():
    jf = compiler.jit(branchy, executors=("inductor", "torch"))
    for x in (torch.randn(8), torch.randn(8) + 0.1, torch.full((8,), 3.0)):
        torch.testing.assert_close(jf(x), branchy(x), rtol=1.3e-6, atol=1e-5)
    executions = [t for t in compiler.last_traces(jf) if "execution trace" in t.header]
    assert [t.header.split(":")[0].split(" (")[0] for t in executions] == ["segment 1", "segment 2"]
    for t in executions:
        assert "ran: inductor 1 region (" in t.header
        assert sum("_fusion_" in b.symbol.name for b in t.bsyms) == 1


def test_the_header_names_only_executors_that_ran_something():
    jf = compiler.jit(lambda x: x.sin() + 1)
    jf(torch.ones(2))
    header = compiler.last_traces(jf)[-1].header
    assert header.startswith("execution trace: torch, python; ran: torch 2 ops")
    assert "inductor" not in header
