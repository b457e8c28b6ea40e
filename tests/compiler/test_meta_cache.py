"""compiler/meta/cache.py: a meta result rebuilt from an equal earlier call has exactly the metadata the meta
kernel gives; views, in-place ops, calls that warn or raise are never rebuilt; and whole traces are the same
with and without the cache."""
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.meta import cache as meta_cache

sys.path.insert(0, "tests/compiler")
from test_gpt_model import make_model, tokens  # noqa: E402


def meta(*shape, grad=False, dtype=torch.float32, leaf=True):
    t = torch.empty(*shape, dtype=dtype, device="meta", requires_grad=grad)
    return t if leaf or not grad else t * 1


def described(m: torch.Tensor):
    return (m.size(), m.stride(), m.storage_offset(), m.dtype, m.requires_grad, m.is_leaf, m._base is None,
            m.untyped_storage().nbytes())


def described_out(out):
    if isinstance(out, torch.Tensor):
        return described(out)
    return type(out), tuple(None if o is None else described(o) for o in out)


@pytest.fixture(autouse=True)
def fresh_table():
    meta_cache.clear()
    yield
    meta_cache.clear()


def call(fn, *args, **kwargs):
    with torch._C.DisableTorchFunction():
        return meta_cache.call(fn, args, kwargs)


def direct(fn, *args, **kwargs):
    with torch._C.DisableTorchFunction():
        return fn(*args, **kwargs)


q = meta(2, 4, 12, 8, grad=True, leaf=False)
x = meta(2, 12, 32, grad=True, leaf=False)
w, W, b = meta(32, grad=True), meta(96, 32, grad=True), meta(96, grad=True)
CASES = {
    "add broadcast": (torch.add, (x, meta(32)), {}),
    "mul scalar int tensor": (torch.mul, (meta(3, 4, dtype=torch.int64), 2.5), {}),
    "add non-contiguous": (torch.add, (meta(4, 6).t(), meta(6, 4)), {}),
    "permuted input": (torch.exp, (meta(2, 3, 4).permute(2, 0, 1),), {}),
    "leaf requiring grad": (torch.sin, (w,), {}),
    "linear 2d": (F.linear, (meta(24, 32, grad=True, leaf=False), W, b), {}),
    "linear 3d, a view of its addmm": (F.linear, (x, W, b), {}),
    "layer_norm": (F.layer_norm, (x, (32,), w, w), {}),
    "sdpa causal": (F.scaled_dot_product_attention, (q, q, q), {"is_causal": True}),
    "sum dim": (torch.sum, (x, (1,)), {"keepdim": True}),
    "var_mean tuple": (torch.var_mean, (x, 1), {}),
    "max with indices": (torch.max, (x, 2), {}),
    "zeros requires_grad leaf": (torch.zeros, ((3, 4),), {"device": "meta", "requires_grad": True}),
    "matmul 3d": (torch.matmul, (x, W.t()), {}),
    "gelu": (F.gelu, (x,), {}),
    "to dtype copy": (torch.Tensor.to, (x, torch.float64), {}),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
def test_rebuilt_result_has_the_kernels_metadata(name, grad):
    fn, args, kwargs = CASES[name]
    with torch.set_grad_enabled(grad):
        want = described_out(direct(fn, *args, **kwargs))
        first = call(fn, *args, **kwargs)
        second = call(fn, *args, **kwargs)
    assert described_out(first) == want
    assert described_out(second) == want
    kept = meta_cache._table[next(iter(meta_cache._table))]
    if name == "zeros requires_grad leaf" or name.startswith("linear 3d"):
        # a leaf requiring grad cannot be rebuilt as one by clone; a view of the kernel's own intermediate
        # is not rebuilt either
        assert kept is meta_cache._NOT_KEPT
    else:
        assert kept is not meta_cache._NOT_KEPT, name
        if isinstance(first, torch.Tensor):
            assert second is not first


def test_grad_mode_is_part_of_the_key():
    call(torch.sin, x)
    with torch.no_grad():
        out = call(torch.sin, x)
    assert not out.requires_grad and out.is_leaf
    assert call(torch.sin, x).requires_grad and len(meta_cache._table) == 2


@pytest.mark.parametrize("op", [
    lambda t: t.view(6, 4), lambda t: t.t(), lambda t: t.detach(), lambda t: t[1:], lambda t: t.reshape(24),
    lambda t: t.contiguous()], ids=["view", "t", "detach", "slice", "reshape", "contiguous-self"])
def test_views_and_aliases_are_not_rebuilt(op):
    t = meta(4, 6)
    for _ in range(2):
        out = call(op, t)
        assert out is t or out._base is t or out.untyped_storage()._cdata == t.untyped_storage()._cdata
    assert meta_cache._table[next(iter(meta_cache._table))] is meta_cache._NOT_KEPT


def test_inplace_and_metadata_changing_ops_are_not_rebuilt():
    t = meta(3, 4, grad=True, leaf=False)
    assert call(torch.Tensor.add_, t, 1.0) is t and call(torch.Tensor.add_, t, 1.0) is t
    u = meta(3, 4)
    call(torch.Tensor.unsqueeze_, u, 0)
    assert u.shape == (1, 3, 4)
    v = meta(3, 4)
    call(torch.Tensor.unsqueeze_, v, 0)  # equal key as u had: runs again, changes v too
    assert v.shape == (1, 3, 4)
    assert all(k is meta_cache._NOT_KEPT for k in meta_cache._table.values())


def test_a_call_that_warns_warns_every_time():
    def warns(t):
        warnings.warn("meta warning", UserWarning)
        return torch.sin(t)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call(warns, x)
        call(warns, x)
    assert [str(w.message) for w in seen] == ["meta warning", "meta warning"]


def test_a_call_that_raises_raises_every_time():
    for _ in range(2):
        with pytest.raises(RuntimeError):
            call(torch.add, meta(3, 4), meta(5, 4))
    assert not meta_cache._table


def test_unknown_argument_types_are_not_keyed():
    call(lambda t, o: torch.sin(t), x, object())
    assert not meta_cache._table


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_gpt_traces_are_the_same_with_and_without_the_cache(cache):
    def traces(enabled):
        meta_cache.clear()
        meta_cache.enabled = enabled
        try:
            model = make_model(torch.float32)
            jm = compiler.jit(model, cache=cache)
            out = jm(tokens())
            texts = [str(t) for t in compiler.last_traces(jm)] + [str(t) for t in compiler.last_prologue_traces(jm)]
            return out, texts, [str(e) for e in compiler.last_events(jm)], model(tokens())
        finally:
            meta_cache.enabled = True

    out_on, texts_on, events_on, eager = traces(True)
    assert meta_cache._table and any(v is not meta_cache._NOT_KEPT for v in meta_cache._table.values())
    out_off, texts_off, events_off, _ = traces(False)
    assert texts_on == texts_off and events_on == events_off
    assert torch.equal(out_on, out_off) and torch.allclose(out_on, eager, rtol=1e-5, atol=1e-6)


def test_a_call_that_writes_into_an_input_is_not_kept():
    def writes(t, buf):  # a new result and an in-place write into another input (as batch_norm's running stats)
        buf.add_(1.0)
        return torch.sin(t)

    buf = meta(4)
    call(writes, x, buf)
    assert buf._version == 1 and meta_cache._table[next(iter(meta_cache._table))] is meta_cache._NOT_KEPT
