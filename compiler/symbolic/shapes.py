"""Torch ops under symbolic values: which of an op's number arguments stay symbolic (`for_op`), and the
symbolic sizes of its outputs (`set_output_shapes`, from the first shape rules here and the rest in
shape_rules.py). A rule runs once, on the traced call, and is compared with eager's meta sizes there.
"""
from __future__ import annotations

import torch

from ..core import tree as pytree
from ..core.context import current_state
from ..core.proxies import TensorProxy
from . import shape_rules  # (by module: its rules are looked up at each call)
from .sizes import UNKNOWN, _broadcast, _dim, _eq_size, _prod, _sym, _Unknown, fix_sizes
from .values import SymFloat, SymInt, _bare, _val, constrain, has_symbolic, specialize_all

# Ops whose Python-number operands only enter elementwise arithmetic: the output's metadata does not depend
# on their values, so they stay symbolic (the executor receives each call's value).
_SCALAR_OPERAND_OPS = frozenset((
    "add sub mul div true_divide floor_divide remainder fmod pow float_power rsub clamp clip clamp_min clamp_max "
    "masked_fill fill full_like where lerp eq ne lt le gt ge addcmul addcdiv leaky_relu hardtanh threshold elu "
    "celu softplus xlogy hypot truediv floordiv mod bitwise_and bitwise_or bitwise_xor and or xor full "
    "nan_to_num logaddexp special_xlogy scalar_tensor mul_scalar").split())


def _base_name(name: str) -> str:
    n = name.rsplit(".", 1)[-1]
    if n.startswith("__") and n.endswith("__"):
        n = n[2:-2]
        if n[:1] in "ri" and n[1:] in _SCALAR_OPERAND_OPS:
            n = n[1:]
    return n.rstrip("_")


def for_op(symbol, args, kwargs):
    """A torch op's arguments under symbolic values: top-level scalar operands of elementwise ops stay
    symbolic; every other symbolic value (shapes, dims, sizes inside lists) is specialized."""
    if not has_symbolic((args, kwargs)):
        return args, kwargs
    reason = f"{symbol.name} needs a concrete value (it decides the result's shape or layout)"
    if symbol.fn is None or _base_name(symbol.name) not in _SCALAR_OPERAND_OPS | _keeps_numbers():
        return specialize_all(tuple(args), reason), specialize_all(dict(kwargs), reason)
    keep = (SymInt, SymFloat)
    if _base_name(symbol.name) in _keeps_numbers():  # shapes given as numbers: the shape rule follows them
        return args, kwargs
    args = tuple(a if isinstance(a, keep) else specialize_all(a, reason) for a in args)
    kwargs = {k: v if isinstance(v, keep) else specialize_all(v, reason) for k, v in kwargs.items()}
    return args, kwargs




_SAME_SHAPE = frozenset((
    "abs neg exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh cosh asin acos atan sigmoid relu relu6 gelu "
    "silu mish elu selu celu softplus softsign sqrt rsqrt reciprocal sign square erf erfc erfinv trunc floor ceil "
    "round frac softmax log_softmax dropout layer_norm rms_norm group_norm clone contiguous detach to type_as "
    "float double half bfloat16 int long bool logical_not bitwise_not hardswish hardsigmoid tril triu "
    "masked_fill nan_to_num positive alias requires_grad").split()) | _SCALAR_OPERAND_OPS - {"full", "scalar_tensor"}


def _tensors(args, kwargs):
    return [a for a in list(args) + list(kwargs.values()) if isinstance(a, TensorProxy)]


def _rule(name, args, kwargs, outs):
    """Symbolic sizes of each tensor output, or raise _Unknown."""
    if name in ("max", "min") and isinstance(args[0], TensorProxy) and \
            isinstance(args[1] if len(args) > 1 else kwargs.get("other"), TensorProxy):
        return [_broadcast([_sym(t) for t in _tensors(args, kwargs)])]  # torch.max(a, b): elementwise
    if name in _SAME_SHAPE:
        if name in ("layer_norm", "rms_norm", "group_norm", "dropout", "softmax", "log_softmax"):
            return [_sym(args[0])]
        return [_broadcast([_sym(t) for t in _tensors(args, kwargs)])]
    if name in ("view", "reshape") and isinstance(args[0], TensorProxy):
        sizes = args[1] if len(args) == 2 and type(args[1]) in (tuple, list, torch.Size) else args[1:]
        sizes = list(kwargs.get("shape", kwargs.get("size", sizes)))
        total = _prod(_sym(args[0]))
        for s in sizes:  # a symbolic -1 would infer the size: the trace assumes given sizes
            if isinstance(s, SymInt):
                holds = f"{_bare(s.pexpr)} >= 0"
                if s.value < 0:
                    raise _Unknown
                constrain(s, holds, holds, "check", "a size given to view/reshape")
        if sum(1 for s in sizes if type(s) is int and s == -1):
            known = _prod(s for s in sizes if not (type(s) is int and s == -1))
            if known == 0:  # (a decision) -1 next to a 0 is ambiguous: eager raises, and so does the meta
                raise _Unknown
            _eq_size(total % known, 0)  # eager raises where the sizes do not divide (a check)
            sizes = [total // known if type(s) is int and s == -1 else s for s in sizes]
        else:
            _eq_size(total, _prod(sizes))  # the same number of elements, or eager raises (a check)
        return [tuple(sizes)]
    if name == "split" and isinstance(args[0], TensorProxy):
        t, split = args[0], args[1] if len(args) > 1 else kwargs["split_size_or_sections"]
        dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
        shape = _sym(t)
        dim = _dim(dim, len(shape))
        if type(split) in (list, tuple):
            return [shape[:dim] + (s,) + shape[dim + 1:] for s in split]
        n = len(outs)
        size = shape[dim]
        if split == 0:  # (a decision) pieces of size 0: eager allows them only for an empty dim
            raise _Unknown
        if size == 0:  # (a decision) an empty dim: one empty piece, not ceil(0 / split) = 0 of them
            raise _Unknown
        bool((size + split - 1) // split == n)  # the number of pieces is a decision
        return [shape[:dim] + ((split if i < n - 1 else size - split * (n - 1)),) + shape[dim + 1:] for i in range(n)]
    if name in ("transpose", "swapaxes", "swapdims"):
        shape = list(_sym(args[0]))
        d0, d1 = _dim(args[1], len(shape)), _dim(args[2], len(shape))
        shape[d0], shape[d1] = shape[d1], shape[d0]
        return [tuple(shape)]
    if name in ("t", "T", "mT") or name == "permute":
        shape = _sym(args[0])
        if name == "permute":
            order = args[1] if len(args) == 2 and type(args[1]) in (tuple, list) else args[1:]
            return [tuple(shape[_dim(d, len(shape))] for d in order)]
        return [shape[:-2] + (shape[-1], shape[-2])] if len(shape) >= 2 else [shape]
    if name == "linear":
        x, w = _sym(args[0]), _sym(args[1])
        _eq_size(x[-1], w[-1])
        return [x[:-1] + (w[0],)] if len(w) == 2 else [x[:-1]]
    if name in ("matmul", "bmm", "mm") and all(len(_sym(t)) >= 2 for t in args[:2]):
        a, b = _sym(args[0]), _sym(args[1])
        _eq_size(a[-1], b[-2])
        batch = _broadcast([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
        return [batch + (a[-2], b[-1])]
    if name == "scaled_dot_product_attention":
        q, v = _sym(args[0]), _sym(args[2])
        return [q[:-1] + v[-1:]]
    if name == "embedding":
        idx, w = _sym(args[0]), _sym(args[1])
        return [idx + (w[1],)]
    if name == "cat":
        tensors = args[0] if args else kwargs["tensors"]
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        shapes = [_sym(t) for t in tensors if not (t.meta.ndim == 1 and t.meta.shape[0] == 0)]
        d = _dim(dim, len(shapes[0]))
        total = 0
        for s in shapes:
            total = total + s[d]
        return [shapes[0][:d] + (total,) + shapes[0][d + 1:]]
    if name == "arange" and len(args) == 1 and not _tensors(args, kwargs):
        return [(args[0],)]
    if name == "arange" and not _tensors(args, kwargs):  # arange(start, end[, step]) of ints
        return [(shape_rules.arange_length(args, kwargs),)]
    if name == "getitem" and isinstance(args[0], TensorProxy):
        return [_index_shape(_sym(args[0]), args[1])]
    if name in _REDUCTIONS and isinstance(args[0], TensorProxy):
        shape = _sym(args[0])
        dim = args[1] if len(args) > 1 and not isinstance(args[1], bool) else kwargs.get("dim", kwargs.get("axis"))
        keep = kwargs.get("keepdim", args[2] if len(args) > 2 and isinstance(args[2], bool) else False)
        if dim is None:
            return [()] * len(outs) if not keep else [(1,) * len(shape)] * len(outs)
        dims = {_dim(d, len(shape)) for d in (dim if type(dim) in (tuple, list) else (dim,))}
        out = tuple((1 if keep else None) if i in dims else s for i, s in enumerate(shape))
        return [tuple(s for s in out if s is not None)] * len(outs)
    if name == "unsqueeze":
        shape = list(_sym(args[0]))
        shape.insert(_dim(args[1], len(shape) + 1), 1)
        return [tuple(shape)]
    if name == "flatten" and len(args) == 1 and not kwargs:
        return [(_prod(_sym(args[0])),)]
    return shape_rules.rule(name, args, kwargs, outs)


_OUTPUT_COUNT_FOLLOWS_SIZES = frozenset("split chunk unbind split_with_sizes tensor_split hsplit vsplit dsplit unsafe_split "
                                        "unsafe_chunk".split())


def _reshaped_in_place(name: str, args, kwargs, target) -> None:
    rule = _RESHAPING_INPLACE[name]
    try:
        if rule is None:
            raise _Unknown
        (shape,) = _rule(rule, args, kwargs, [target])
        shape = tuple(shape)
        if len(shape) != target.meta.ndim or any(_val(d) != m for d, m in zip(shape, target.meta.shape)):
            raise _Unknown
    except (_Unknown, IndexError, KeyError, TypeError, ValueError, AttributeError):
        target.sym_shape = UNKNOWN
        return
    target.sym_shape = shape if any(isinstance(d, SymInt) for d in shape) else None


_REDUCTIONS = frozenset("sum mean amax amin max min prod std var logsumexp all any argmax argmin".split())


def _index_shape(shape, key):
    """Basic indexing with ints, unit-step slices, None and ...; anything else is not followed."""
    key = key if type(key) is tuple else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise _Unknown
    if any(k is Ellipsis for k in key):  # ... stands for the dims the other entries leave
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        rest = len(shape) - sum(k is not None for k in key if k is not Ellipsis)
        key = key[:i] + (slice(None),) * max(rest, 0) + key[i + 1:]
    if sum(k is not None for k in key) > len(shape):
        raise _Unknown
    out = []
    dims = iter(shape)
    for k in key:
        if k is None:  # a new dim of size 1
            out.append(1)
            continue
        size = next(dims)
        if type(k) is slice:
            if k.step not in (None, 1):
                raise _Unknown
            start = 0 if k.start is None else k.start
            stop = size if k.stop is None else k.stop
            if type(start) is int and start < 0 or type(stop) is int and stop < 0:
                raise _Unknown
            # eager clamps the bounds; the trace assumes they are in range (a constraint when symbolic)
            if not (start >= 0 and start <= stop and stop <= size):
                raise _Unknown
            out.append(size if k.start is None and k.stop is None else stop - start)
        elif isinstance(k, int) and not isinstance(k, bool):
            continue  # selects: the dim goes
        else:
            raise _Unknown
    return tuple(out) + tuple(dims)


_KEEPS: list = []


def _keeps_numbers() -> frozenset:
    """Ops whose number arguments (sizes) their shape rule follows: they stay symbolic."""
    if not _KEEPS:
        _KEEPS.append(frozenset(("view", "reshape", "split", "arange", "getitem")) | shape_rules.KEEPS_NUMBERS)
    return _KEEPS[0]


# In-place ops that change the sizes of the tensor they are called on: its sizes follow their out-of-place
# rule (or become unknown, so that reading them specializes).
_RESHAPING_INPLACE = {"t_": "t", "transpose_": "transpose", "swapdims_": "swapdims", "swapaxes_": "swapaxes",
                      "unsqueeze_": "unsqueeze", "squeeze_": "squeeze", "resize_": None, "resize_as_": None,
                      "as_strided_": None, "set_": None, "resize": None}


def set_output_shapes(symbol, args, kwargs, out) -> None:
    """After an op is recorded: the symbolic sizes of its new tensor outputs (and of a tensor an in-place op
    reshaped: `x.t_()`, `x.unsqueeze_(0)`)."""
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, TensorProxy)]
    involved = any(t.sym_shape is not None for t in tensors) or has_symbolic((args, kwargs))
    outs = [o for o in pytree.tree_leaves(out) if isinstance(o, TensorProxy)]
    fresh = [o for o in outs if all(o is not t for t in tensors)]
    raw = symbol.name.rsplit(".", 1)[-1]
    if raw in _RESHAPING_INPLACE and tensors and involved:
        _reshaped_in_place(raw, args, kwargs, tensors[0])
        return
    counted = isinstance(out, (tuple, list)) and _base_name(symbol.name) in _OUTPUT_COUNT_FOLLOWS_SIZES
    if not involved or not (fresh or counted):  # (no result at all: `unbind` of an empty dim decides it too)
        return
    try:
        shapes = _rule(_base_name(symbol.name), args, kwargs, outs)
        if len(shapes) != len(outs):
            raise _Unknown
        for o, s in zip(outs, shapes):
            s = tuple(s)
            if len(s) != o.meta.ndim or any(_val(d) != m for d, m in zip(s, o.meta.shape)):
                raise _Unknown  # a rule that disagrees with eager's meta: never trust it
    except (_Unknown, IndexError, KeyError, TypeError, ValueError, AttributeError):
        if counted:
            # how many results (unpacked by the program, laid out in the trace) depends on a size no rule
            # followed: every size is decided
            fix_sizes(current_state(), f"the number of results of {symbol.name}")
            return
        for o in fresh:
            o.sym_shape = UNKNOWN
        return
    for o, s in zip(outs, shapes):
        if any(o is t for t in fresh):
            s = tuple(s)
            o.sym_shape = s if any(isinstance(d, SymInt) for d in s) else None
