"""Each rule's "Under each compiler" docs, checked against the compilers themselves.

The pattern of every rule (rules/compilers.py BEHAVIOUR, the same table the docs page renders) runs
under eager PyTorch, under real torch.compile on CPU (the eager backend, with a backend that counts the
graphs it is given), and under compiler.jit; every claim the docs make is asserted here.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

import compiler
from counting_backend import CountingBackend
from rules import RULES, render_docs
from rules.compilers import BEHAVIOUR


def _program(b):
    ns: dict = {}
    exec(compile(b.source, "<pattern>", "exec"), ns)
    return ns


def _observe(b, make_callable):
    """Outputs, inputs after the call, printed text and module state, call by call."""
    ns = _program(b)
    fn = make_callable(ns["f"])
    seen = []
    sign = 1.0
    for step in b.calls:
        if step == "bump":
            ns["bump"]()
            continue
        if step == "negate":
            sign = -sign
            continue
        n_args = ns["f"].__code__.co_argcount
        args = [torch.arange(1.0, 1.0 + torch.Size(step).numel()).reshape(step) * sign for _ in range(n_args)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = fn(*args)
        seen.append((result.tolist(), [a.tolist() for a in args], out.getvalue(), ns.get("calls")))
    return seen


@pytest.mark.parametrize("code", sorted(BEHAVIOUR))
def test_torch_compile_does_what_the_docs_say(code):
    b = BEHAVIOUR[code]
    eager = _observe(b, lambda f: f)
    backend = CountingBackend()
    graphs_per_call = []

    def compiled(f):
        jf = torch.compile(f, backend=backend, dynamic=True if b.dynamic else None)

        def call(*args):
            before = len(backend.graphs)
            r = jf(*args)
            graphs_per_call.append(len(backend.graphs) - before)
            return r

        return call

    got = _observe(b, compiled)
    assert "eager" in b.torch_compile_claims
    assert got == eager
    if "recompiles" in b.torch_compile_claims:
        assert graphs_per_call[0] >= 1 and sum(graphs_per_call[1:]) >= 1, graphs_per_call
    else:
        assert sum(graphs_per_call[1:]) == 0, f"{code}: recompiled, which the docs do not say: {graphs_per_call}"
    if "graph break" in b.torch_compile_claims:
        assert max(graphs_per_call) >= 2, f"{code}: no graph break: {graphs_per_call}"
    else:
        assert max(graphs_per_call) <= 1, f"{code}: a graph break the docs do not mention: {graphs_per_call}"


@pytest.mark.parametrize("code", sorted(BEHAVIOUR))
def test_compiler_jit_does_what_the_docs_say(code):
    b = BEHAVIOUR[code]
    eager = _observe(b, lambda f: f)
    options = {"cache": "symbolic values"} if b.dynamic else {}
    if b.ours_claim == "eager":
        assert _observe(b, lambda f: compiler.jit(f, **options)) == eager
    else:
        with pytest.raises(Exception) as info:
            _observe(b, lambda f: compiler.jit(f, **options))
        assert type(info.value).__name__ == b.ours_claim


@pytest.mark.parametrize("code", sorted(BEHAVIOUR))
def test_the_docs_page_shows_each_compiler(code):
    page = render_docs(code)
    assert "## Under each compiler" in page and BEHAVIOUR[code].source.splitlines()[0] in page
    assert "torch.compile" in page and "compiler.jit" in page and "thunder" in page


def test_every_jit_rule_has_a_pattern():
    from rules import JIT_ONLY

    assert JIT_ONLY <= set(BEHAVIOUR) <= set(RULES)


def test_torch_compile_draws_python_random_on_every_call_with_a_graph_break():
    # TL204's torch.compile note for `random.random()` (denoising-diffusion-pytorch's self-conditioning coin,
    # `if self.self_condition and random() < 0.5:`): the draw happens on every call, as eager's, and breaks the graph
    import random

    def f(x):
        y = x * 2
        if random.random() < 0.5:
            y = y + 1
        return y - 1

    backend = CountingBackend()
    jf = torch.compile(f, backend=backend)
    random.seed(0)
    got = [jf(torch.ones(2))[0].item() for _ in range(8)]
    random.seed(0)
    assert got == [f(torch.ones(2))[0].item() for _ in range(8)] and len(set(got)) == 2
    assert len(backend.graphs) >= 2  # the code before and after the draw: separate graphs
