"""Decompositions of torch ops into prims, recorded as the op's sub-symbols.

They make every op analysable at the prim level and let an executor that only knows prims run a trace.
Each is checked when recorded: its final outputs must have the op's shapes and dtypes (meta from eager);
if not - or if it raises `Skip` for arguments it does not cover - the op keeps no sub-symbols and still
runs as the torch op itself. Random ops get none: a re-implementation would draw different numbers.
"""
from __future__ import annotations

import math

import torch

from . import prims
from ..core.proxies import TensorProxy


class Skip(NotImplementedError):
    """This decomposition does not cover these arguments."""


def _is_t(x) -> bool:
    return isinstance(x, TensorProxy)


def _result_type(*xs) -> torch.dtype:
    """Eager's type promotion over all operands (exact for two; folded pairwise beyond)."""
    ops = [x.meta if _is_t(x) else x for x in xs if _is_t(x) or isinstance(x, (bool, int, float, complex))]
    if not any(isinstance(o, torch.Tensor) for o in ops):
        raise Skip("no tensor operand")
    with torch._C.DisableTorchFunction():
        acc = ops[0]
        for x in ops[1:]:
            dims = any(isinstance(o, torch.Tensor) and o.ndim for o in (acc, x))
            acc = torch.empty((1,) if dims else (), dtype=torch.result_type(acc, x), device="meta")
        return acc.dtype if isinstance(acc, torch.Tensor) else torch.result_type(acc, acc)


def _to(x, dtype):
    if _is_t(x) and x.dtype != dtype:
        return prims.convert_element_type(x, dtype)
    return x


def _expand(x, shape):
    if _is_t(x) and tuple(x.shape) != tuple(shape):
        return prims.broadcast_to(x, tuple(shape))
    return x


def _elementwise(prim, *xs, compute_dtype=None):
    tensors = [x for x in xs if _is_t(x)]
    if not tensors:
        raise Skip("no tensor operand")
    shape = torch.broadcast_shapes(*[t.shape for t in tensors])
    dtype = compute_dtype or _result_type(*xs)
    ops = [_expand(_to(x, dtype), shape) for x in xs]
    if not _is_t(ops[0]):  # torch calls want a tensor first
        ops[0] = prims.full(tuple(shape), ops[0], dtype=dtype, device=tensors[0].device)
    return prim(*ops)


def _float_dtype(dtype):
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.get_default_dtype()


def _unary(prim, floating=True):
    def dec(a, *rest, **kw):
        if rest or kw:
            raise Skip("extra arguments")
        return prim(_to(a, _float_dtype(a.dtype)) if floating else a)

    return dec


def _relu(a, inplace=False):
    return prims.where(prims.gt(a, 0), a, prims.full((), 0, dtype=a.dtype, device=a.device))


def _square(a):
    return prims.mul(a, a)


UNARY = {n: _unary(getattr(prims, n)) for n in
         "exp log log1p tanh erf sqrt rsqrt sin cos reciprocal sigmoid".split()}
UNARY.update({n: _unary(getattr(prims, n), floating=False) for n in "neg abs floor ceil sign".split()})
UNARY.update(negative=UNARY["neg"], relu=_relu, square=_square, logical_not=_unary(prims.logical_not, False))


def _binary(prim, result_bool=False):
    def dec(a, b, *rest, alpha=None, **kw):
        if rest or kw:
            raise Skip("extra arguments")
        if alpha is not None and alpha != 1:
            b = _elementwise(prims.mul, b, alpha)
        return _elementwise(prim, a, b)

    return dec


def _div(a, b, *rest, rounding_mode=None):
    if rest or rounding_mode is not None:
        raise Skip("rounding mode")
    return _elementwise(prims.div, a, b, compute_dtype=_float_dtype(_result_type(a, b)))


def _masked_fill(a, mask, value):
    return prims.where(_expand(mask, a.shape), _expand(_to(value, a.dtype), a.shape) if _is_t(value) else value, a)


BINARY = {n: _binary(getattr(prims, n)) for n in
          "add sub mul pow maximum minimum eq ne lt le gt ge logical_and logical_or remainder".split()}
BINARY.update(div=_div, divide=_div, true_divide=_div, subtract=BINARY["sub"], multiply=BINARY["mul"],
              greater=BINARY["gt"], greater_equal=BINARY["ge"], less=BINARY["lt"], less_equal=BINARY["le"],
              not_equal=BINARY["ne"], masked_fill=_masked_fill)


def where(cond, a=None, b=None):
    if a is None:
        raise Skip("single-argument where is nonzero()")
    shape = torch.broadcast_shapes(*[t.shape for t in (cond, a, b) if _is_t(t)])
    dtype = _result_type(a, b) if (_is_t(a) or _is_t(b)) else None
    a2 = _expand(_to(a, dtype), shape) if _is_t(a) else a
    b2 = _expand(_to(b, dtype), shape) if _is_t(b) else b
    return prims.where(_expand(cond, shape), a2, b2)


def where_method(self, condition, other):
    """Tensor.where(condition, other) is torch.where(condition, self, other)."""
    return where(condition, self, other)


def reflected(dec):
    return lambda a, b: dec(b, a)


def inplace_of(dec):
    """x.op_(...) = copy the out-of-place result into x (the write the analysis layer looks for)."""

    def inplace(a, *args, **kwargs):
        return prims.copy_(a, _to(_expand(dec(a, *args, **kwargs), a.shape), a.dtype))

    return inplace


# ---- reductions ----
def _dims(a, dim):
    if dim is None:
        return tuple(range(a.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % max(a.ndim, 1) for d in dims)


def _sum(a, dim=None, keepdim=False, *, dtype=None):
    if dtype is None and not (a.dtype.is_floating_point or a.dtype.is_complex):
        dtype = torch.int64
    return prims.sum(_to(a, dtype or a.dtype), _dims(a, dim), keepdim)


def _mean(a, dim=None, keepdim=False, *, dtype=None):
    x = _to(a, dtype or a.dtype)
    dims = _dims(a, dim)
    n = math.prod(a.shape[d] for d in dims) if a.ndim else 1
    return prims.div(prims.sum(x, dims, keepdim), n)


def _amax(a, dim=(), keepdim=False):
    return prims.amax(a, _dims(a, dim if dim != () else None), keepdim)


def _softmax(a, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise Skip("implicit dim")
    if dtype is None:
        _floating_only(a, "softmax")
    out_dtype = dtype or _float_dtype(a.dtype)
    x = _to(a, _compute_dtype(out_dtype))  # (half/bfloat16: in float32, as eager's kernel)
    m = prims.amax(x, (dim,), True)
    e = prims.exp(prims.sub(x, prims.broadcast_to(m, tuple(x.shape))))
    s = prims.sum(e, (dim,), True)
    return _to(prims.div(e, prims.broadcast_to(s, tuple(x.shape))), out_dtype)


def _log_softmax(a, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise Skip("implicit dim")
    if dtype is None:
        _floating_only(a, "softmax")
    out_dtype = dtype or _float_dtype(a.dtype)
    x = _to(a, _compute_dtype(out_dtype))  # (half/bfloat16: in float32, as eager's kernel)
    m = prims.amax(x, (dim,), True)
    shifted = prims.sub(x, prims.broadcast_to(m, tuple(x.shape)))
    lse = prims.log(prims.sum(prims.exp(shifted), (dim,), True))
    return _to(prims.sub(shifted, prims.broadcast_to(lse, tuple(x.shape))), out_dtype)


REDUCTION = {"sum": _sum, "mean": _mean, "amax": _amax, "softmax": _softmax, "log_softmax": _log_softmax}


def _floating_only(a, op: str) -> None:
    """Eager's kernel for `op` is defined for floating (and complex) inputs only; an integer input is not
    decomposed, so the op runs as itself and raises as eager does (its meta function does not check)."""
    if _is_t(a) and not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise Skip(f"{op} of a {a.dtype} tensor: eager's kernel refuses it")


def _compute_dtype(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def layer_norm(a, normalized_shape, weight=None, bias=None, eps=1e-5, *rest):
    _floating_only(a, "layer_norm")
    dims = tuple(range(a.ndim - len(normalized_shape), a.ndim))
    x = _to(a, _compute_dtype(a.dtype))
    mean = prims.broadcast_to(_mean(x, dims, True), tuple(x.shape))
    var = prims.broadcast_to(prims.var(x, dims, correction=0, keepdim=True), tuple(x.shape))
    y = prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))
    if weight is not None:
        y = _elementwise(prims.mul, y, weight)
    if bias is not None:
        y = _elementwise(prims.add, y, bias)
    return _to(y, a.dtype)


def rms_norm(a, normalized_shape, weight=None, eps=None):
    _floating_only(a, "rms_norm")
    dims = tuple(range(a.ndim - len(normalized_shape), a.ndim))
    x = _to(a, _compute_dtype(a.dtype))
    eps = torch.finfo(a.dtype).eps if eps is None else eps
    ms = prims.broadcast_to(_mean(prims.mul(x, x), dims, True), tuple(x.shape))
    y = prims.mul(x, prims.rsqrt(prims.add(ms, eps)))
    if weight is not None:
        y = _elementwise(prims.mul, y, weight)
    return _to(y, a.dtype)


# Eager's kernels for these compute half and bfloat16 inputs in float32 and round once at the end; the prims
# do the same (rounding after every prim would differ from eager by many ulps after a norm).
def gelu(a, approximate="none"):
    _floating_only(a, "gelu")
    x = _to(a, _compute_dtype(a.dtype))
    if approximate == "tanh":
        inner = prims.mul(prims.add(x, prims.mul(prims.mul(prims.mul(x, x), x), 0.044715)), math.sqrt(2 / math.pi))
        return _to(prims.mul(prims.mul(x, 0.5), prims.add(prims.tanh(inner), 1.0)), a.dtype)
    return _to(prims.mul(prims.mul(x, 0.5), prims.add(prims.erf(prims.mul(x, 1 / math.sqrt(2))), 1.0)), a.dtype)


def silu(a, inplace=False):
    _floating_only(a, "silu")
    x = _to(a, _compute_dtype(a.dtype))
    return _to(prims.mul(x, prims.sigmoid(x)), a.dtype)


def dropout_returns_input(p, training) -> bool:
    """ATen's dropout (F.dropout, torch.dropout) with p=0 or not in training returns its input itself and draws
    nothing: recording leaves such a call out of the trace (a kept random op would cut every ViT layer's region)."""
    return (type(p) in (float, int) and p == 0) or training is False


def dropout(a, p=0.5, training=True, inplace=False):
    """Off CUDA, ATen's dropout is `a * (empty_like(a).bernoulli_(1 - p) / (1 - p))`: the same draws in the same
    order (the noise a random prim laid out as empty_like lays it), its scaling and product fuse with their
    neighbours. CUDA's fused kernel draws otherwise; p of 1 (zeros, no draw) and in-place take other paths in
    ATen: those stay the op, as do symbolic sizes (the noise's layout is per size). p of 0 and eval never get
    here (dropout_returns_input)."""
    if not _is_t(a) or a.device.type != "cpu" or not a.dtype.is_floating_point or type(p) not in (float, int) or \
            not 0 < p < 1 or training is not True or inplace or a.meta.numel() == 0 or \
            getattr(a, "sym_shape", None) is not None:
        raise Skip("random: only CPU's dropout is re-implemented with eager's draws")
    like = torch.empty_like(a.meta)
    noise = prims.bernoulli_noise(tuple(like.shape), tuple(like.stride()), 1 - p, dtype=a.dtype, device=a.device)
    return prims.mul(a, prims.div(noise, 1 - p))


def linear(a, w, b=None):
    if w.ndim != 2:
        raise Skip("1-D weight")
    y = prims.matmul(a, prims.permute(w, (1, 0)))
    return _elementwise(prims.add, y, b) if b is not None else y


def matmul(a, b):
    return prims.matmul(a, b)


def addmm(bias, a, b, *, beta=1, alpha=1, out=None):
    """beta * bias + alpha * (a @ b) (GPT-2's Conv1D): a matmul and an add, which fuse with their neighbours."""
    if out is not None or a.ndim != 2 or b.ndim != 2 or isinstance(beta, bool) or isinstance(alpha, bool) or beta == 0:
        raise Skip("out=, operands eager refuses, or beta=0 (eager ignores bias's values, yet gives it a zero gradient)")
    y = prims.matmul(a, b)
    if alpha != 1:
        y = _elementwise(prims.mul, y, alpha)
    return _elementwise(prims.add, y, bias if beta == 1 else _elementwise(prims.mul, bias, beta))


def embedding(idx, weight, padding_idx=None, max_norm=None, *rest, **kw):
    if max_norm is not None:
        raise Skip("max_norm renormalizes the weight in place")
    scale_grad_by_freq = rest[1] if len(rest) > 1 else kw.get("scale_grad_by_freq", False)
    sparse = rest[2] if len(rest) > 2 else kw.get("sparse", False)
    if getattr(weight, "requires_grad", True) and (padding_idx is not None or scale_grad_by_freq or sparse):
        # eager's backward zeroes the padding row's gradient (and scales or sparsifies it): index_select's
        # would not (BERT's tied word embeddings differed in row 0 through inductor)
        raise Skip("padding_idx, scale_grad_by_freq or sparse change the weight's gradient")
    flat = prims.reshape(idx, (-1,))
    return prims.reshape(prims.index_select(weight, 0, flat), (*idx.shape, weight.shape[1]))


def sdpa(*args, **kwargs):
    raise Skip("fused attention kept whole")


def index_select(a, dim, index):
    return prims.index_select(a, dim, index)


def cat(tensors, dim=0):
    dtype = _result_type(*tensors)
    return prims.cat([_to(t, dtype) for t in tensors], dim)


# ---- views ----
def _shape_arg(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else tuple(args)


def _reshape(a, *shape):
    return prims.reshape(a, _shape_arg(shape))


def _flatten(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return prims.reshape(a, (1,))
    s, e = start_dim % a.ndim, end_dim % a.ndim
    return prims.reshape(a, (*a.shape[:s], math.prod(a.shape[s:e + 1]), *a.shape[e + 1:]))


def _permute(a, *dims):
    return prims.permute(a, _shape_arg(dims))


def _transpose(a, d0, d1):
    perm = list(range(a.ndim))
    if a.ndim:
        perm[d0 % a.ndim], perm[d1 % a.ndim] = perm[d1 % a.ndim], perm[d0 % a.ndim]
    return prims.permute(a, tuple(perm))


VIEWS = {"reshape": _reshape, "flatten": _flatten, "ravel": lambda a: prims.reshape(a, (-1,)),
         "reshape_as": lambda a, o: prims.reshape(a, tuple(o.shape)), "permute": _permute,
         "transpose": _transpose, "unsqueeze": lambda a, d: prims.unsqueeze(a, d)}


def conversion(name):
    dtypes = {"float": torch.float32, "double": torch.float64, "half": torch.float16, "bfloat16": torch.bfloat16,
              "int": torch.int32, "long": torch.int64, "short": torch.int16, "char": torch.int8,
              "byte": torch.uint8, "bool": torch.bool, "cfloat": torch.complex64}

    def dec(a, *rest, **kw):
        if name == "type_as":
            return prims.convert_element_type(a, rest[0].dtype)
        if rest or kw:
            raise Skip("memory_format")
        return prims.convert_element_type(a, dtypes[name])

    return dec


# ---- in-place writes and creation ----
def copy_(a, src, non_blocking=False):
    if not _is_t(src):
        raise Skip("copy_ from a non-tensor")
    return prims.copy_(a, _expand(_to(src, a.dtype), a.shape))


def zero_(a):
    return prims.copy_(a, prims.full(tuple(a.shape), 0, dtype=a.dtype, device=a.device))


def fill_(a, value):
    if _is_t(value):
        return prims.copy_(a, _expand(_to(value, a.dtype), a.shape))
    return prims.copy_(a, prims.full(tuple(a.shape), value, dtype=a.dtype, device=a.device))


def _default_device(device):
    """A factory's device: the one named, else the default device of the traced call where it is not the CPU
    (`with torch.device("cuda"):` around the call): a fused segment before a data-dependent read runs inside
    tracing, where that torch-function mode is not active."""
    from ..core.context import current_state

    state = current_state()
    default = getattr(state, "default_device", None)
    return device if device is not None or default is None or default.type == "cpu" else default


def _creation(value):
    def dec(*size, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
        if requires_grad or out is not None:
            raise Skip("requires_grad/out")
        shape = _shape_arg(size)
        return prims.full(shape, value, dtype=dtype or torch.get_default_dtype(), device=_default_device(device))

    return dec


def _full(size, fill_value, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False):
    if requires_grad or _is_t(fill_value):
        raise Skip("requires_grad / tensor fill")
    return prims.full(tuple(size), fill_value, dtype=dtype, device=_default_device(device))


CREATION = {"zeros": _creation(0), "ones": _creation(1), "full": _full}
