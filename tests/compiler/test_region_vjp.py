"""Region backward from per-prim VJPs (compiler/passes/vjp.py): a fusion region whose inputs require grad
runs as one autograd.Function whose backward is the region's VJP trace, compiled like a forward region.

Each case checks that the region's autograd node is the VJP one (not AOTAutograd's, not torch's ops), that
the backward trace is printed by compiler.last_backward_traces, and that every gradient equals eager's.
Breadth uses the aot_eager backend (same graphs, no C++ code generation); one case runs real inductor.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.executors.inductor import InductorExecutor
from compiler.passes.vjp import RULES

AOT_EAGER = InductorExecutor(backend="aot_eager")


def _nodes(t) -> set[str]:
    seen, todo, names = set(), [t.grad_fn], set()
    while todo:
        n = todo.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        names.add(type(n).__name__)
        todo.extend(f for f, _ in n.next_functions)
    return names


def _inputs(shapes, seed=0, positive=False):
    gen = torch.Generator().manual_seed(seed)
    xs = []
    for s in shapes:
        x = torch.randn(s, generator=gen, dtype=torch.float64)
        xs.append((x.abs() + 0.5 if positive else x).requires_grad_())
    return xs


def _check(fn, shapes, executor=AOT_EAGER, positive=False, expect_vjp=True):
    xs = _inputs(shapes, positive=positive)
    jf = compiler.jit(fn, executors=(executor, "torch"))
    out = jf(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    gen = torch.Generator().manual_seed(1)
    cots = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    got = torch.autograd.grad(outs, xs, cots, allow_unused=True)
    ref_outs = fn(*xs)
    ref_outs = ref_outs if isinstance(ref_outs, tuple) else (ref_outs,)
    want = torch.autograd.grad(ref_outs, xs, cots, allow_unused=True)
    for o, r in zip(outs, ref_outs):
        torch.testing.assert_close(o, r)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-10)
    nodes = set().union(*[_nodes(o) for o in outs])
    backward = compiler.last_backward_traces(jf)
    if expect_vjp:
        assert "_RegionFunctionBackward" in nodes, nodes
        assert "CompiledFunctionBackward" not in nodes, nodes  # not torch.compile's own autograd
        assert backward and all(not isinstance(b, str) for b in backward), backward
        assert all("grad_" in str(b) and "per-prim VJPs" in str(b) for b in backward)
    return jf, nodes, backward


CASES = {
    "unary-chain": (lambda x: torch.tanh(torch.exp(x) * torch.sin(x)) + torch.cos(x).abs() + torch.sigmoid(x).reciprocal(),
                    [(3, 5)], False),
    "logs-roots": (lambda x: torch.log(x) + torch.log1p(x) * torch.sqrt(x) + torch.rsqrt(x) * torch.erf(x), [(4, 3)], True),
    "binary-broadcast": (lambda x, y: (x * y - x / y + y) * 2.0 + x / 3.0, [(3, 4), (4,)], True),
    "pow": (lambda x, y: x ** 3 + x ** y + torch.pow(x, 0.0) * x, [(3, 4), (3, 4)], True),
    "maximum-ties": (lambda x, y: torch.maximum(x, y.clamp(max=0.0)) * torch.minimum(x, torch.zeros_like(x)) + x.floor(),
                     [(5,), (5,)], False),
    "where-masks": (lambda x, y: torch.where(x > y, x * 2, y.exp()) + (x < 0).to(x.dtype) * y, [(3, 4), (3, 4)], False),
    "reductions": (lambda x: (x.sum(0) * x.mean(-1, keepdim=True).sum() + x.amax(1).sum() * x.var(0).sum(),
                              x.sum()), [(4, 6)], False),
    "amax-ties": (lambda x: torch.cat([x, x], 0).amax(0) * 3.0 + 1.0, [(2, 3)], False),
    "views": (lambda x: (x.reshape(6, 2).permute(1, 0) * 2 + 1).unsqueeze(0).squeeze(0).t().reshape(3, 4) * x, [(3, 4)], False),
    "slices-cat": (lambda x, y: torch.cat([x[:, 1:3] * 2, y.exp()], dim=1) + 1, [(3, 5), (3, 2)], False),
    "casts": (lambda x: (x.float() * 2).double().exp() + x, [(3, 4)], False),
    "layer-norm-gelu": (lambda x, w, b: F.gelu(F.layer_norm(x, (8,), w, b), approximate="tanh") * F.silu(x) + x,
                        [(3, 8), (8,), (8,)], False),
    "softmax": (lambda x: torch.softmax(x * 2, -1) + torch.log_softmax(x, 0), [(3, 4)], False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_region_backward_is_the_vjp_trace_and_equals_eager(name):
    fn, shapes, positive = CASES[name]
    _check(fn, shapes, positive=positive)


def test_unused_outputs_leave_none_gradients_as_eager():
    def f(x, y):  # one region (x links both parts); only the first output is used
        return x * 2 + 1, (x + y).exp() * 3
    xs = _inputs([(3,), (3,)])
    jf = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    a, b = jf(*xs)
    assert "_RegionFunctionBackward" in _nodes(a)
    a.sum().backward()
    assert xs[1].grad is None  # eager: y reaches only the unused output
    torch.testing.assert_close(xs[0].grad, torch.full((3,), 2.0, dtype=torch.float64))


def test_boolean_outputs_are_not_differentiable():
    def f(x):
        return x * 2 + 1, (x * 3 > 1) & (x < 5)
    x = _inputs([(4,)])[0]
    y, mask = compiler.jit(f, executors=(AOT_EAGER, "torch"))(x)
    assert y.requires_grad and not mask.requires_grad and mask.dtype == torch.bool


def test_double_backward_goes_through_torch_autograd():
    def f(x):
        return torch.tanh(x * x) * 3 + x
    x = _inputs([(4,)])[0]
    y = compiler.jit(f, executors=(AOT_EAGER, "torch"))(x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    (g_ref,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    (gg_ref,) = torch.autograd.grad(g_ref.sum(), x)
    torch.testing.assert_close(g, g_ref)
    torch.testing.assert_close(gg, gg_ref)


def test_prim_without_a_rule_keeps_torch_compiles_autograd_and_says_so():
    assert __import__("compiler").torchlang.prims.remainder not in RULES

    def f(x, y):
        return torch.remainder(x * 3, y) * x + 1
    jf, nodes, backward = _check(f, [(3, 4), (3, 4)], positive=True, expect_vjp=False)
    assert "_RegionFunctionBackward" not in nodes
    assert len(backward) == 1 and "no VJP rule for prims.remainder" in backward[0]


def test_backward_trace_prints_and_runs_through_real_inductor():
    fn, shapes, positive = CASES["layer-norm-gelu"]
    jf, nodes, backward = _check(fn, shapes, executor="inductor")
    text = str(backward[0])
    assert "prims.rsqrt" in text and "prims.tanh" in text and "return (" in text


def test_linear_layers_and_their_weight_views_join_one_region():
    """Inductor takes matmuls into regions, and the views of weights and biases (recorded before their
    readers) wait for their reader's region instead of splitting it off."""
    def f(x, w1, b1, w2):
        h = F.gelu(F.linear(F.layer_norm(x, (8,)), w1, b1))
        return F.linear(h, w2) + x

    jf, nodes, backward = _check(f, [(2, 3, 8), (16, 8), (16,), (8, 16)])
    fused = compiler.last_traces(jf)[-1]
    regions = [b for b in fused.bsyms if getattr(b.symbol, "region", None) is not None]
    assert len(regions) == 1 and len(backward) == 1
    members = {b.symbol.name for b in regions[0].symbol.region.bsyms}
    assert {"prims.matmul", "prims.permute", "prims.broadcast_to"} <= members
    assert [b.symbol.name for b in fused.bsyms if b not in regions] == []
    # two matmuls per layer for the gradients; the first layer's result (gelu's VJP reads it) comes from the forward
    assert str(backward[0]).count("prims.matmul") == 4
    assert "reading 3 matmul and reduction results of the forward" in str(backward[0])  # (and layer_norm's two)
