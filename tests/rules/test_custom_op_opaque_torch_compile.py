"""A torch.library custom op's body is opaque to torch.compile: it runs as one op (its fake kernel gives the
shapes), so its Python (a loop over a size, a write into a global dict) runs eagerly at every call and neither
specializes nor recompiles the graph around it. The project index treats the custom op like a disabled function
(rules/_jit_scopes.py CUSTOM_OPS); this checks the claim on CPU with a counting backend (unsloth's CLEF norm-pool
op loops `for begin in range(0, length, chunk)` inside such an op, under torch.compile(dynamic=True))."""

from __future__ import annotations

import torch

calls = {"n": 0}


@torch.library.custom_op("thunder_lint_test::chunked_sum", mutates_args=())
def chunked_sum(x: torch.Tensor, chunk: int) -> torch.Tensor:
    calls["n"] += 1  # a Python side effect in the body: runs at every call, as eager
    out = torch.zeros(x.shape[0])
    for begin in range(0, x.shape[1], chunk):  # a loop over a size: no specialization outside the op
        out += x[:, begin:begin + chunk].sum(1)
    return out


@chunked_sum.register_fake
def _(x, chunk):
    return x.new_empty(x.shape[0])


def test_custom_op_body_is_opaque_under_dynamic_compile():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x):
        return chunked_sum(x, 4) * 2

    compiled = torch.compile(f, backend=backend, dynamic=True, fullgraph=True)
    before = calls["n"]
    for length in (8, 12, 20, 36):
        x = torch.randn(3, length)
        torch.testing.assert_close(compiled(x), f(x))
    assert len(graphs) == 1  # one graph for every length: the loop inside the op never specialized it
    assert calls["n"] - before == 8  # the body ran at every call, compiled and eager alike
