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


def test_a_segment_that_ends_inside_no_grad_keeps_its_results_autograd_history():
    """The cut before `v1.view(-1)` (a size read of `x[mask]`) falls inside a no_grad block: that segment was planned
    in the block's grad mode, taken for the caller's, and the copies giving its results memory of their own were
    made under no_grad, so `x.float()` came back a leaf without grad (aliasing_fuzz seed 137695)."""
    from compiler.executors.inductor import InductorExecutor

    def fn(x, alias):
        v0 = x.float()
        v1 = x[x > 0]
        with torch.no_grad():
            v1.view(-1).add_(1)
        return v0, v0 * 2

    jf = compiler.jit(fn, executors=(InductorExecutor(backend="aot_eager"), "torch"))
    for _ in range(2):
        leaf = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        x = leaf * 1
        got, want = jf(x, x.view(-1)), fn(x, x.view(-1))
        for g, w in zip(got, want):
            assert (g.requires_grad, g.is_leaf) == (w.requires_grad, w.is_leaf) == (True, False)
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        grads = torch.autograd.grad(sum(o.sum() for o in got), leaf, retain_graph=True)
        torch.testing.assert_close(grads, torch.autograd.grad(sum(o.sum() for o in want), leaf))
