"""Which ops fusion regions take: torch view ops that are a narrowing or a reshape of their argument join
regions as prims, ops that return their argument itself (`x.to(x.dtype)`) neither split regions nor stay in
the trace, and attention (tagged random for its dropout) does not close the regions around it. Each case
checks eager's values (and gradients) and the shape of the execution trace: fewer regions, fewer torch ops
between them (each a Python call on every run, and an autograd node in training)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import compiler
from compiler.executors.inductor import InductorExecutor

AOT_EAGER = InductorExecutor(backend="aot_eager")


def _regions(trace):
    return [b for b in trace.bsyms if getattr(b.symbol, "region", None) is not None]


def _outside(trace):
    return [b.symbol.name for b in trace.bsyms if getattr(b.symbol, "region", None) is None]


def attention(x, w_qkv, w_out, heads=4):
    batch, seq, width = x.shape
    q, k, v = F.linear(F.layer_norm(x, (width,)), w_qkv).split(width, dim=-1)
    q, k, v = (t.view(batch, seq, heads, width // heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.transpose(1, 2).contiguous().view(batch, seq, width)
    return x + F.linear(y, w_out) * 0.5


def test_split_and_view_after_a_projection_join_its_region():
    jfn = compiler.jit(attention, executors=(AOT_EAGER, "torch"))
    g = torch.Generator().manual_seed(0)
    x, w_qkv, w_out = (torch.randn(s, generator=g, dtype=torch.float64, requires_grad=True)
                       for s in ((2, 6, 16), (48, 16), (16, 16)))
    out = jfn(x, w_qkv, w_out)
    expected = attention(x, w_qkv, w_out)
    torch.testing.assert_close(out, expected)
    grads = torch.autograd.grad(out.square().sum(), (x, w_qkv, w_out))
    for got, want in zip(grads, torch.autograd.grad(expected.square().sum(), (x, w_qkv, w_out))):
        torch.testing.assert_close(got, want)
    trace = compiler.last_traces(jfn)[-1]
    outside = _outside(trace)
    # before: split and three views outside, and attention closed the first region
    assert "Tensor.split" not in outside and "Tensor.view" not in outside, str(trace)
    assert len(_regions(trace)) == 2, str(trace)
    assert outside.count("F.scaled_dot_product_attention") == 1


def rms_norm(x, w):
    h = x.to(torch.float32)  # returns x itself for a float32 x
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * h.to(x.dtype) + 1.0


def test_a_cast_that_returns_its_argument_neither_splits_a_region_nor_stays():
    jfn = compiler.jit(rms_norm, executors=(AOT_EAGER, "torch"))
    x, w = torch.randn(3, 8), torch.randn(8)
    torch.testing.assert_close(jfn(x, w), rms_norm(x, w))
    trace = compiler.last_traces(jfn)[-1]
    assert len(_regions(trace)) == 1 and _outside(trace) == [], str(trace)
    plain = compiler.jit(rms_norm)  # the default path drops it too: it made nothing and cannot raise
    torch.testing.assert_close(plain(x, w), rms_norm(x, w))
    assert "Tensor.to" not in str(compiler.last_traces(plain)[-1])


def test_a_reshape_that_copies_is_not_taken_for_a_view():
    # x.t() of a transposed x is contiguous; reshaping x itself to that shape copies (other elements at the
    # same strides): the view must stay what it is
    def f(x):
        return x.t() * 2, x.t()[1:3] + 1

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x = torch.randn(4, 3).t()
    for got, want in zip(jfn(x), f(x)):
        torch.testing.assert_close(got, want)


def test_a_narrowing_view_the_caller_receives_stays_a_view():
    def f(x):
        y = x * 2
        return y[:, 1:3], y.sum()

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    out, total = jfn(torch.randn(3, 4))
    assert out._is_view() and out.stride() == (4, 1)


def test_a_region_concatenating_a_legacy_empty_tensor_along_a_negative_dim_has_a_vjp():
    # transformers' DynamicCache starts from torch.tensor([]) and concatenates keys along dim -2; the cat's
    # VJP read the empty tensor's size at that dim (an IndexError while planning a training step)
    def f(cache, k):
        keys = torch.cat([cache, k * 2], dim=-2)
        return keys.sum(-1) + 1

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    k = torch.randn(2, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    out = jfn(torch.tensor([], dtype=torch.float64), k)
    expected = f(torch.tensor([], dtype=torch.float64), k)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(torch.autograd.grad(out.sum(), k)[0], torch.autograd.grad(expected.sum(), k)[0])
    assert compiler.last_backward_traces(jfn), "the region's backward is its VJP"


def test_only_a_graph_whose_inlined_expressions_explode_realizes_more():
    # inductor's default inlining is kept where duplication stays bounded (the elementwise block of
    # bench/fusion.py); ten wheres reading their input three times would inline into 3^10 nodes
    from compiler.executors import inductor

    def wheres(v):
        for _ in range(10):
            v = torch.where(v > 0, v, -v)
        return v * 2

    def block(x, r, w, b):
        h = F.gelu(x, approximate="tanh") * F.silu(r)
        d = h - h.mean(-1, keepdim=True)
        return d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5) * w + b + x

    sizes = {}
    for fn, args in ((wheres, (torch.randn(4, 4),)), (block, (torch.randn(4, 8), torch.randn(4, 8), torch.randn(8),
                                                              torch.randn(8)))):
        jfn = compiler.jit(fn, executors=(AOT_EAGER, "torch"))
        torch.testing.assert_close(jfn(*args), fn(*args))
        (region,) = _regions(compiler.last_traces(jfn)[-1])
        sizes[fn.__name__] = inductor.inlined_size(region.symbol.region.bsyms)
    assert sizes["wheres"] > inductor.INLINED_BOUND >= sizes["block"], sizes
    assert inductor._options("inductor", sizes["wheres"])["realize_opcount_threshold"] == inductor.REALIZE_SMALL
    assert "realize_opcount_threshold" not in inductor._options("inductor", sizes["block"])
    assert inductor._options("inductor", sizes["block"])["joint_graph_constant_folding"] is False


def test_independent_projections_of_one_input_are_one_region_with_eager_none_gradients():
    # before: one region per projection (three region calls and backward nodes); one node must still give
    # None, as eager, to the weights of an output that got no gradient
    def f(x, wq, wk, wv):
        return (x @ wq).tanh() * 2, (x @ wk).sigmoid() + 1, (x @ wv).relu() * 3

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(s, generator=g, dtype=torch.float64, requires_grad=True) for s in ((5, 8), (8, 8), (8, 8),
                                                                                          (8, 8))]
    out, expected = jfn(*args), f(*args)
    for a, b in zip(out, expected):
        torch.testing.assert_close(a, b)
    assert len(_regions(compiler.last_traces(jfn)[-1])) == 1, str(compiler.last_traces(jfn)[-1])
    got = torch.autograd.grad(out[0].sum() + out[2].sum(), args, allow_unused=True)
    want = torch.autograd.grad(expected[0].sum() + expected[2].sum(), args, allow_unused=True)
    assert got[2] is None and want[2] is None
    for a, b in zip(got, want):
        if b is not None:
            torch.testing.assert_close(a, b)


def test_indexing_that_copies_is_not_taken_for_a_narrowing():
    # x[[0, 1]] has the layout of x[0:2] (contiguous rows from offset 0) but is a copy of the rows it names;
    # x[[0, 2]] too, with other values: only a real view is rewritten
    def f(x):
        return (x[[0, 2]] * 2).sum(-1) + 1

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x = torch.randn(4, 5, 3)
    torch.testing.assert_close(jfn(x), f(x))


def test_a_scalar_operand_made_a_tensor_joins_its_readers_region():
    # `0.5 * g` decomposes to prims.full(g.shape, 0.5) * g; the full depends on nothing, and joined the first open
    # region (before the cumsum) as one of its outputs: a tensor in memory handed across, per call
    def f(x):
        h = (x.tanh() * 2).sum(-1) + 1
        g = h.cumsum(0)
        return 0.5 * g * (1.0 + (g * 0.7).tanh())

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x = torch.randn(6, 5)
    torch.testing.assert_close(jfn(x), f(x))
    trace = compiler.last_traces(jfn)[-1]
    for r in _regions(trace):
        made_by = {o.name: s.symbol.name for s in r.subsymbols for o in s.tensor_outputs()}
        assert not any(made_by[o.name] == "prims.full" for o in r.symbol.region.outputs), str(trace)
    assert sum("prims.full" in [s.symbol.name for s in r.subsymbols] for r in _regions(trace)) >= 1, str(trace)
