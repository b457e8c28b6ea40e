"""The primitive set: a small group of ops every torch-language op decomposes into.

Prims are symbols like any other: metadata from the real op on meta tensors, executed by the torch
executor as the torch call beside each name. Elementwise prims expect operands already broadcast and of one
dtype (the decompositions insert `broadcast_to` and `convert_element_type`).
"""
from __future__ import annotations

import types

import torch

from ..core.symbols import Symbol, Tag
from ..meta.functions import generic_meta
from ..core.trace import register_ctx_name

_IMPLS: dict[str, object] = {}


def _prim(name: str, fn, tags: Tag = Tag.NONE) -> Symbol:
    _IMPLS[name] = fn
    return Symbol(f"prims.{name}", fn, Tag.PRIM | tags, generic_meta)


def _convert_element_type(a, dtype):
    return a.to(dtype)


def _broadcast_to(a, shape):
    return a.expand(shape)


# elementwise
abs = _prim("abs", torch.abs)
neg = _prim("neg", torch.neg)
exp = _prim("exp", torch.exp)
log = _prim("log", torch.log)
log1p = _prim("log1p", torch.log1p)
tanh = _prim("tanh", torch.tanh)
erf = _prim("erf", torch.erf)
sqrt = _prim("sqrt", torch.sqrt)
rsqrt = _prim("rsqrt", torch.rsqrt)
sin = _prim("sin", torch.sin)
cos = _prim("cos", torch.cos)
reciprocal = _prim("reciprocal", torch.reciprocal)
sigmoid = _prim("sigmoid", torch.sigmoid)
floor = _prim("floor", torch.floor)
ceil = _prim("ceil", torch.ceil)
sign = _prim("sign", torch.sign)
logical_not = _prim("logical_not", torch.logical_not)
add = _prim("add", torch.add)
sub = _prim("sub", torch.sub)
mul = _prim("mul", torch.mul)
div = _prim("div", torch.div)
pow = _prim("pow", torch.pow)
remainder = _prim("remainder", torch.remainder)
maximum = _prim("maximum", torch.maximum)
minimum = _prim("minimum", torch.minimum)
eq = _prim("eq", torch.eq)
ne = _prim("ne", torch.ne)
lt = _prim("lt", torch.lt)
le = _prim("le", torch.le)
gt = _prim("gt", torch.gt)
ge = _prim("ge", torch.ge)
logical_and = _prim("logical_and", torch.logical_and)
logical_or = _prim("logical_or", torch.logical_or)
where = _prim("where", torch.where)
# reductions (dims is a tuple; keepdim explicit)
sum = _prim("sum", torch.sum)
amax = _prim("amax", torch.amax)
amin = _prim("amin", torch.amin)
prod = _prim("prod", torch.prod)
var = _prim("var", torch.var)
# shapes, layout, data movement
reshape = _prim("reshape", torch.reshape, Tag.MAY_RETURN_VIEW)
permute = _prim("permute", torch.permute, Tag.RETURNS_VIEW)
broadcast_to = _prim("broadcast_to", _broadcast_to, Tag.RETURNS_VIEW)
unsqueeze = _prim("unsqueeze", torch.unsqueeze, Tag.RETURNS_VIEW)
squeeze = _prim("squeeze", torch.squeeze, Tag.RETURNS_VIEW)
slice_in_dim = _prim("slice_in_dim", torch.narrow, Tag.RETURNS_VIEW)
cat = _prim("cat", torch.cat)
index_select = _prim("index_select", torch.index_select)
convert_element_type = _prim("convert_element_type", _convert_element_type, Tag.MAY_RETURN_VIEW)
matmul = _prim("matmul", torch.matmul)
full = _prim("full", torch.full, Tag.CREATION)
uniform_like = _prim("uniform_like", torch.rand_like, Tag.RANDOM)


def _bernoulli_noise(shape, stride, p, dtype=None, device=None):
    return torch.empty_strided(shape, stride, dtype=dtype, device=device).bernoulli_(p)


# dropout's noise as ATen draws it off CUDA (`empty_like(x).bernoulli_(1 - p)`), laid out as x: no tensor operand
bernoulli_noise = _prim("bernoulli_noise", _bernoulli_noise, Tag.RANDOM)
copy_ = _prim("copy_", torch.Tensor.copy_, Tag.INPLACE)


# functional traces (passes/functionalize.py): a fresh copy to write into, and the write-back of a
# caller-visible mutation at the end of the trace (seed 1193), which returns the input it wrote.
def _clone(a):
    return torch.clone(a, memory_format=torch.preserve_format)


def _copy_to_out_(a, out):
    return out.copy_(a)


def _scatter_view(base, value, shape, stride, view):
    """`base` with the elements that `view(base)` selects replaced by `value`, as a fresh tensor laid out
    like the traced base (so the replayed view ops view, exactly as they did when traced)."""
    out = torch.empty_strided(shape, stride, dtype=base.dtype, device=base.device)
    out.copy_(base)
    view(out).copy_(value)
    return out


clone = _prim("clone", _clone)
scatter_view = _prim("scatter_view", _scatter_view)
copy_to_out_ = _prim("copy_to_out_", _copy_to_out_, Tag.INPLACE)

register_ctx_name("prims", types.SimpleNamespace(**_IMPLS))
