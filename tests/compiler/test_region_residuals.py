"""A region's training forward hands its backward the matmul and reduction results the VJP reads (passes/vjp.py
with_residuals), instead of the backward computing them again from the inputs; and what the backward gives and
takes is laid out as eager's is (a linear layer's weight gradient in the weight's layout; gradients in the layout
the backward was compiled for). Every gradient against eager's; breadth on aot_eager, layouts on real inductor.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

import compiler
from compiler.executors import inductor as inductor_module
from compiler.executors.inductor import InductorExecutor

AOT_EAGER = InductorExecutor(backend="aot_eager")


def _leaves(*shapes, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=dtype).requires_grad_() for s in shapes]


def _grads(fn, xs, cot_seed=1):
    out = fn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    gen = torch.Generator().manual_seed(cot_seed)
    cots = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    return outs, torch.autograd.grad(outs, xs, cots, allow_unused=True)


def _mlp(x, w1, b1, w2):
    h = F.gelu(F.linear(F.layer_norm(x, (8,)), w1, b1))
    return F.linear(h, w2).sum(-1) + x.sum(-1)


def test_the_backward_reads_matmul_results_from_the_forward_and_equals_eager():
    xs = _leaves((2, 3, 8), (16, 8), (16,), (8, 16))
    jf = compiler.jit(_mlp, executors=(AOT_EAGER, "torch"))
    outs, got = _grads(jf, xs)
    ref, want = _grads(_mlp, xs)
    torch.testing.assert_close(outs, ref)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-10)
    (bw,) = compiler.last_backward_traces(jf)
    assert bw.residuals and "matmul and reduction results of the forward" in bw.header
    # the backward's matmuls are the gradients' (two per layer); the forward's first-layer product is an argument
    assert str(bw).count("prims.matmul") == 4
    assert {p.name for p in bw.residuals} <= {p.name for p in bw.args}


def test_a_returned_product_is_not_kept_so_a_caller_may_write_into_it_as_in_eager():
    """eager's mm saves its inputs, not its result: writing into the returned product before backward is allowed.
    Kept for the backward, autograd would refuse that backward (a saved tensor changed)."""
    def f(x, w):
        m = x @ w
        return m, torch.tanh(m) * 2

    for fn in (f, compiler.jit(f, executors=(AOT_EAGER, "torch"))):
        x, w = _leaves((3, 4), (4, 5))
        m, t = fn(x, w)
        with torch.no_grad():
            m.add_(1)
        (m.sum() + t.sum()).backward()
        if fn is f:
            want = (x.grad, w.grad)
        else:
            torch.testing.assert_close((x.grad, w.grad), want)
    (bw,) = compiler.last_backward_traces(fn)
    assert not getattr(bw, "residuals", None) or all(p.name != "m" for p in bw.residuals)


def test_double_backward_with_kept_results_equals_eager():
    def f(x, w):
        return torch.tanh(x @ w).sum(-1) * x.sum(-1)

    x, w = _leaves((3, 4), (4, 5))
    jf = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    (g,) = torch.autograd.grad(jf(x, w).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad((g * g).sum(), w)
    (g_ref,) = torch.autograd.grad(f(x, w).sum(), x, create_graph=True)
    (gg_ref,) = torch.autograd.grad((g_ref * g_ref).sum(), w)
    torch.testing.assert_close(g, g_ref)
    torch.testing.assert_close(gg, gg_ref)
    assert compiler.last_backward_traces(jf)[0].residuals  # the fast backward exists; create_graph took the other


def test_a_linear_weight_gradient_has_the_weight_layout_as_in_eager():
    """`(x.T @ g).T` would be a transposed view, which autograd's AccumulateGrad copies into the parameter's
    layout on every step; the VJP computes `g.T @ x` as eager does."""
    layer = torch.nn.Linear(8, 16).double()
    x = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    jf = compiler.jit(lambda x: F.gelu(layer(x)).sum(), executors=(AOT_EAGER, "torch"))
    jf(x).backward()
    got = layer.weight.grad.clone()
    assert layer.weight.grad.stride() == layer.weight.stride()
    layer.weight.grad = None
    F.gelu(layer(x)).sum().backward()
    torch.testing.assert_close(got, layer.weight.grad)
    (bw,) = compiler.last_backward_traces(jf)
    made = {o.name: b.symbol.name for b in bw.bsyms for o in b.tensor_outputs()}
    weight_grad = [g for g in bw.output if g is not None and tuple(g.meta.shape) == (16, 8)]
    assert [made[g.name] for g in weight_grad] == ["prims.matmul"]  # not a permute of one


def test_gradients_in_another_layout_than_the_first_calls_are_taken_in_the_compiled_layout():
    """Real inductor checks each input's strides: the backward is compiled for the first call's gradient layout
    (here transposed), and a later call whose gradient comes contiguous is copied into that layout, not refused."""
    def f(x, w):
        return torch.tanh(x @ w) * 2 + 1

    x, w = _leaves((6, 4), (4, 6), dtype=torch.float32)
    jf = compiler.jit(f, executors=("inductor", "torch"))
    for use in (lambda y: (y.t() * torch.arange(36.0).view(6, 6)).sum(),  # gradient of y: a transposed tensor
                lambda y: (y * torch.arange(36.0).view(6, 6)).sum(),      # contiguous
                lambda y: (y.t() * torch.arange(36.0).view(6, 6)).sum()):
        got = torch.autograd.grad(use(jf(x, w)), (x, w))
        want = torch.autograd.grad(use(f(x, w)), (x, w))
        torch.testing.assert_close(got, want)


def test_a_region_called_often_is_compiled_again_with_the_cpp_wrapper_and_still_equals_eager(monkeypatch):
    monkeypatch.setattr(inductor_module, "TIER_UP_CALLS", 3)

    def f(x, w, b):
        return F.gelu(F.linear(x, w, b)).sum(-1) * 0.5

    x, w, b = _leaves((5, 8), (12, 8), (12,), seed=3, dtype=torch.float32)
    jf = compiler.jit(f, executors=("inductor", "torch"))
    for _ in range(5):
        (gx, gw, gb) = torch.autograd.grad(jf(x, w, b).sum(), (x, w, b))
        torch.testing.assert_close((gx, gw, gb), torch.autograd.grad(f(x, w, b).sum(), (x, w, b)))
    graphs = [g for g in inductor_module._COMPILED.values() if g.vjp is not None and g.vjp.fast_compiled is not None]
    tiered = [g.vjp.fast_compiled for g in graphs] + [d for g in graphs for d in g.direct.values()]
    tiered = [t for t in tiered if isinstance(t, inductor_module._TieredGraph)]
    # the training forward and the backward, each called 5 times: both rebuilt with the C++ wrapper
    assert len([t for t in tiered if t.calls >= 3 and t.cpp_wrapped]) >= 2


def test_the_parts_of_a_split_get_one_gradient_by_one_cat_as_in_eager():
    """`q, k, v = x.split(n, -1)` (an attention projection): the parts' gradients joined by one cat, as eager's split
    backward does, not a zero-padded copy of x per part summed (three cats, two adds; and -0.0 + 0.0 is +0.0, so
    a part whose gradient is -0.0 lost its sign)."""
    def f(x):
        q, k, v = x.split([2, 3, 4], dim=1)
        return q * -0.0, k * v[:, :3]

    x = _leaves((3, 9))[0]
    jf = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    outs, got = _grads(jf, [x])
    ref, want = _grads(f, [x])
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch.equal(torch.signbit(got[0]), torch.signbit(want[0]))  # the -0.0 gradients of q's columns
    (bw,) = compiler.last_backward_traces(jf)
    names = [b.symbol.name for b in bw.bsyms]
    assert "prims.add" not in names and names.count("prims.cat") == 2  # x's parts; v's part and its unread tail


def test_overlapping_narrowings_still_add_their_gradients():
    def f(x):
        a, b = x.split([4, 5], dim=1)
        return a.exp(), b * x[:, 2:7].sin(), x[1:].cos()

    x = _leaves((3, 9))[0]
    outs, got = _grads(compiler.jit(f, executors=(AOT_EAGER, "torch")), [x])
    ref, want = _grads(f, [x])
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_a_graph_whose_calls_take_long_is_not_compiled_again(monkeypatch):
    monkeypatch.setattr(inductor_module, "TIER_UP_CALLS", 3)
    monkeypatch.setattr(inductor_module, "TIER_UP_MAX_CALL_S", 0.0)  # every call counts as long

    def f(x, w):
        return torch.sigmoid(x @ w).sum(-1) * 3.0

    x, w = _leaves((7, 5), (5, 9), seed=4, dtype=torch.float32)
    jf = compiler.jit(f, executors=("inductor", "torch"))
    for _ in range(4):
        torch.testing.assert_close(torch.autograd.grad(jf(x, w).sum(), (x, w)), torch.autograd.grad(f(x, w).sum(), (x, w)))
    graphs = [g for g in inductor_module._COMPILED.values() if g.vjp is not None and g.vjp.fast_compiled is not None
              and "sigmoid" in str(g.vjp.fast)]
    tiered = [t for g in graphs for t in (g.vjp.fast_compiled, *g.direct.values()) if isinstance(t, inductor_module._TieredGraph)]
    decided = [t for t in tiered if t.calls >= 3]
    assert decided and all(t.upgrade is None and not t.cpp_wrapped for t in decided)


def test_a_reduction_over_dimensions_of_size_one_is_not_kept():
    """Its result holds its input's elements: a compiled graph may hand it back as a view of the input, which a
    later write into the input would change before the backward reads it."""
    def f(x):
        return torch.tanh(x.sum(-1, keepdim=True) * x.amax(0, keepdim=True)).sum(0)

    x = _leaves((4, 1))[0]
    jf = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    outs, got = _grads(jf, [x])
    torch.testing.assert_close(got, _grads(f, [x])[1])
    (bw,) = compiler.last_backward_traces(jf)
    fwd = {o.name: b for t in compiler.last_traces(jf) for r in t.bsyms if getattr(r.symbol, "region", None)
           for b in r.symbol.region.bsyms for o in b.tensor_outputs()}
    kept = [fwd[p.name].symbol.name for p in (getattr(bw, "residuals", None) or ())]
    assert "prims.sum" not in kept and "prims.amax" in kept, kept


def test_zero_dimensional_reductions():
    """fuzz seed 760071: a softmax over dim 0 of a 0-d tensor (its amax and sum reduce nothing) crashed the
    residual choice."""
    def f(a):
        return F.softmax(a, dim=0) * 3, (a.exp() * 2).sum()

    a = _leaves(())[0]
    outs, got = _grads(compiler.jit(f, executors=(AOT_EAGER, "torch")), [a])
    ref, want = _grads(f, [a])
    torch.testing.assert_close(outs, ref)
    torch.testing.assert_close(got, want)
