"""More shape rules for cache="symbolic values" (compiler/symbolic/sizes.py holds the design, shapes.py the first
rules).

Each rule gives an op's output sizes as expressions of its inputs' symbolic sizes and numbers, or raises
`_Unknown` (the output's sizes are then UNKNOWN: reading them specializes every symbolic input). A rule runs
once, on the traced call; its result is compared with eager's meta sizes there (compiler.symbolic.
shapes.set_output_shapes), so a rule can only be wrong for OTHER values: where a size's role changes with its value
(a 1 that broadcasts or is squeezed, a -1 that means "keep"), the rule decides it with a constraint.
"""
from __future__ import annotations

import math

import torch

from .sizes import _broadcast, _dim, _eq_size, _prod, _sym, _Unknown
from .values import SymInt, _lit, constrain, specialize

# Ops whose size arguments stay symbolic (the rule below follows them; the torch executor gets each call's
# values). Other ops' numbers are specialized before the op is recorded.
KEEPS_NUMBERS = frozenset((
    "expand broadcast_to repeat narrow topk pad zeros ones empty rand randn full new_zeros new_ones new_empty "
    "new_full col2im").split())

_SEQ = (tuple, list, torch.Size)


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _const(args, kwargs, i, name, default=None):
    """A dim or flag of an op in KEEPS_NUMBERS: the rule reads it as a plain number (C would read a symbolic int's
    value without asking it), so it is specialized."""
    return specialize(_arg(args, kwargs, i, name, default), "a dim given to an op whose sizes stay symbolic")


def _sizes(args, kwargs, start, *names):
    """Sizes given as `f(t, 2, 3)`, `f(t, (2, 3))` or `f(t, size=(2, 3))`."""
    for n in names:
        if n in kwargs:
            v = kwargs[n]
            return list(v) if type(v) in _SEQ else [v]
    rest = args[start:]
    if len(rest) == 1 and type(rest[0]) in _SEQ:
        return list(rest[0])
    return list(rest)


def _nonneg(s, what):
    """A symbolic size argument: eager gives negative values another meaning or raises; the trace assumes >= 0."""
    if isinstance(s, SymInt):
        if s.value < 0:
            raise _Unknown
        holds = f"{s.pexpr} >= 0"
        constrain(s, holds, holds, "check", what)
    return s


def _is_one(d) -> bool:
    """Whether a size is 1 (a symbolic size that is not known >= 2 decides it: the op treats 1 apart)."""
    if type(d) is int:
        return d == 1
    if getattr(d, "at_least_2", False):
        return False
    return bool(d == 1)


def _expand(shape, sizes):
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise _Unknown
    out = []
    for i, s in enumerate(sizes):
        if isinstance(s, SymInt) and s.value == -1:
            raise _Unknown  # a symbolic -1: "keep" for this value only
        if i < lead:
            out.append(_nonneg(s, "a size given to expand"))
            continue
        d = shape[i - lead]
        if type(s) is int and s == -1:
            out.append(d)
        elif _is_one(d):
            out.append(_nonneg(s, "a size given to expand"))
        else:
            out.append(_eq_size(d, s))
    return tuple(out)


def _ntuple(v, n):
    if type(v) in _SEQ:
        v = list(v)
        if len(v) == 1:
            return v * n
        if len(v) != n:
            raise _Unknown
        return v
    return [v] * n


def _window(size, k, s, p, d, ceil=False):
    """Output length of a sliding window (conv, pooling, unfold)."""
    span = d * (k - 1) + 1 - 2 * p  # (plain numbers folded first: the trace records fewer scalar ops)
    if not ceil:
        return (size - span) // s + 1
    out = (size - span + s - 1) // s + 1
    # torch's ceil_mode: the last window must start inside the input or its left padding, else it is dropped
    # (a Python `if` on a symbolic size: a constraint of the trace, so a size on the other side traces again)
    if (out - 1) * s >= size + p:
        out = out - 1
    return out


def _conv_transpose(args, kwargs, n):
    x, w = _sym(args[0]), _sym(_arg(args, kwargs, 1, "weight"))
    stride = _ntuple(_arg(args, kwargs, 3, "stride", 1), n)
    padding = _ntuple(_arg(args, kwargs, 4, "padding", 0), n)
    out_pad = _ntuple(_arg(args, kwargs, 5, "output_padding", 0), n)
    groups = _arg(args, kwargs, 6, "groups", 1)
    dilation = _ntuple(_arg(args, kwargs, 7, "dilation", 1), n)
    if len(x) not in (n + 1, n + 2) or len(w) != n + 2:
        raise _Unknown
    _eq_size(x[-n - 1], w[0])  # input channels (eager raises otherwise)
    out = tuple((x[-n + i] - 1) * stride[i] + (dilation[i] * (w[2 + i] - 1) + out_pad[i] + 1 - 2 * padding[i])
                for i in range(n))
    return x[:-n - 1] + (w[1] * groups,) + out


def _conv(args, kwargs, n):
    x, w = _sym(args[0]), _sym(_arg(args, kwargs, 1, "weight"))
    stride = _ntuple(_arg(args, kwargs, 3, "stride", 1), n)
    padding = _arg(args, kwargs, 4, "padding", 0)
    dilation = _ntuple(_arg(args, kwargs, 5, "dilation", 1), n)
    groups = _arg(args, kwargs, 6, "groups", 1)
    if len(x) not in (n + 1, n + 2) or len(w) != n + 2:
        raise _Unknown
    _eq_size(x[-n - 1], w[1] * groups)  # channels (eager raises otherwise)
    spatial = x[-n:]
    if padding == "same":
        out = tuple(spatial)
    else:
        padding = [0] * n if padding == "valid" else _ntuple(padding, n)
        out = tuple(_window(spatial[i], w[2 + i], stride[i], padding[i], dilation[i]) for i in range(n))
    return x[:-n - 1] + (w[0],) + out


def _pool(name, args, kwargs, outs):
    n = int(name[-2])
    x = _sym(args[0])
    k = _ntuple(_arg(args, kwargs, 1, "kernel_size"), n)
    stride = _arg(args, kwargs, 2, "stride")
    stride = k if stride is None or (type(stride) in _SEQ and not stride) else _ntuple(stride, n)
    padding = _ntuple(_arg(args, kwargs, 3, "padding", 0), n)
    if name.startswith("max"):
        dilation, ceil = _ntuple(_arg(args, kwargs, 4, "dilation", 1), n), _arg(args, kwargs, 5, "ceil_mode", False)
    else:
        dilation, ceil = [1] * n, _arg(args, kwargs, 4, "ceil_mode", False)
    out = x[:-n] + tuple(_window(x[-n + i], k[i], stride[i], padding[i], dilation[i], ceil) for i in range(n))
    return [out] * len(outs)


def _adaptive(name, args, kwargs, outs):
    n = int(name[-2])
    x = _sym(args[0])
    size = _ntuple(_arg(args, kwargs, 1, "output_size"), n)
    out = x[:-n] + tuple(x[-n + i] if s is None else s for i, s in enumerate(size))
    return [out] * len(outs)


def _movedim(shape, source, destination):
    nd = len(shape)
    src = [_dim(s, nd) for s in (source if type(source) in _SEQ else [source])]
    dst = [_dim(d, nd) for d in (destination if type(destination) in _SEQ else [destination])]
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    return tuple(shape[o if o is not None else next(rest)] for o in order)


def _diagonal(shape, offset, dim1, dim2):
    nd = len(shape)
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    a, b = shape[d1], shape[d2]
    # (Python's min/max on symbolic sizes record which side they chose)
    n = max(min(a, b - offset), 0) if offset >= 0 else max(min(a + offset, b), 0)
    return tuple(s for i, s in enumerate(shape) if i not in (d1, d2)) + (n,)


def _tensor_split(args, kwargs, outs):
    shape = _sym(args[0])
    how = _arg(args, kwargs, 1, "indices_or_sections", kwargs.get("sections", kwargs.get("indices")))
    d = _dim(_arg(args, kwargs, 2, "dim", 0), len(shape))
    size = shape[d]
    if isinstance(how, torch.Tensor) or type(how).__name__ == "TensorProxy":
        raise _Unknown
    if type(how) in _SEQ:  # split before each index (clamped to the size: min/max on it are decisions)
        if any(type(i) is int and i < 0 for i in how):
            raise _Unknown  # (counted from the end: not followed)
        bounds = [0] + list(how) + [size]
        pieces = []
        for i in range(len(bounds) - 1):
            start = bounds[i] if i == 0 else min(bounds[i], size)
            stop = size if i == len(bounds) - 2 else min(bounds[i + 1], size)
            pieces.append(max(stop - start, 0))
    else:  # n sections: the first size % n pieces one longer; piece i has (size + n - 1 - i) // n
        pieces = [(size + how - 1 - i) // how for i in range(len(outs))]
    return [shape[:d] + (p,) + shape[d + 1:] for p in pieces]


def arange_length(args, kwargs):
    start, end, step = (_arg(args, kwargs, i, n, d) for i, n, d in ((0, "start", 0), (1, "end", None),
                                                                     (2, "step", 1)))
    if end is None or any(not isinstance(v, int) or isinstance(v, bool) for v in (start, end, step)):
        raise _Unknown  # (floats: torch's length rounds in double precision; not followed)
    if isinstance(step, SymInt) or step <= 0:
        raise _Unknown
    return _nonneg(end - start, "arange's end - start") if step == 1 else (end - start + step - 1) // step


def _recurrent(name, args, kwargs, outs):
    """torch.rnn_tanh/rnn_relu/gru/lstm (nn.RNN/GRU/LSTM): output (batch, time, hidden * directions) and the
    final states shaped as the initial ones. Packed sequences (a batch_sizes tensor second) are not followed."""
    x = _sym(args[0])
    hx = args[1]
    if name == "lstm":
        if type(hx) not in _SEQ or len(args) != 9:
            raise _Unknown
        states = [_sym(h) for h in hx]
    else:
        if type(args[2]) not in _SEQ or len(args) != 9:
            raise _Unknown
        states = [_sym(hx)]
    bidirectional, batch_first = args[7], args[8]
    h = states[0]
    feat = h[-1] * (2 if bidirectional else 1)
    if len(x) == 2:  # unbatched: (time, features)
        out = (x[0], feat)
    elif len(x) == 3:
        out = (x[0], x[1], feat)
        _eq_size(x[0] if batch_first else x[1], h[1])
    else:
        raise _Unknown
    return [out, *states]


def rule(name, args, kwargs, outs):
    """Symbolic sizes of each tensor output of op `name`, or raise _Unknown."""
    if name in ("expand", "broadcast_to"):
        return [_expand(_sym(args[0]), _sizes(args, kwargs, 1, "size", "shape"))]
    if name == "expand_as":
        other = _sym(_arg(args, kwargs, 1, "other"))
        return [_expand(_sym(args[0]), list(other))]
    if name == "squeeze":
        shape = _sym(args[0])
        dim = _sizes(args, kwargs, 1, "dim")
        dims = {_dim(d, len(shape)) for d in dim} if dim and dim != [None] else set(range(len(shape)))
        return [tuple(s for i, s in enumerate(shape) if not (i in dims and _is_one(s)))]
    if name == "gather":
        return [_sym(_arg(args, kwargs, 2, "index"))]
    if name in ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put",
                "masked_scatter", "index_reduce", "put"):
        return [_sym(args[0])]
    if name == "index_select":
        shape, index = _sym(args[0]), _sym(_arg(args, kwargs, 2, "index"))
        d = _dim(_arg(args, kwargs, 1, "dim"), len(shape))
        return [shape[:d] + (_prod(index),) + shape[d + 1:]]
    if name == "take_along_dim":
        shape, idx = _sym(args[0]), _sym(_arg(args, kwargs, 1, "indices"))
        dim = _arg(args, kwargs, 2, "dim")
        if dim is None:
            return [(_prod(idx),)]
        if len(shape) != len(idx):
            raise _Unknown
        d = _dim(dim, len(shape))
        rest = _broadcast([shape[:d] + shape[d + 1:], idx[:d] + idx[d + 1:]])
        return [rest[:d] + (idx[d],) + rest[d:]]
    if name in ("conv1d", "conv2d", "conv3d"):
        return [_conv(args, kwargs, int(name[-2]))]
    if name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return [_conv_transpose(args, kwargs, int(name[-2]))]
    if name == "unfold":  # Tensor.unfold(dim, size, step): windows along dim, each a new last dim
        shape = _sym(args[0])
        size, step = _arg(args, kwargs, 2, "size"), _arg(args, kwargs, 3, "step")
        if not shape:
            return [(size,)]
        d = _dim(_arg(args, kwargs, 1, "dimension"), len(shape))
        return [shape[:d] + (_window(shape[d], size, step, 0, 1),) + shape[d + 1:] + (size,)]
    if name == "im2col":  # F.unfold: (N, C, H, W) -> (N, C * kh * kw, number of windows)
        x = _sym(args[0])
        k, dil, pad, st = (list(_arg(args, kwargs, i, n)) for i, n in
                           enumerate(("kernel_size", "dilation", "padding", "stride"), 1))
        if len(x) not in (3, 4):
            raise _Unknown
        blocks = _prod([_window(x[-2 + i], k[i], st[i], pad[i], dil[i]) for i in range(2)])
        return [x[:-3] + (x[-3] * k[0] * k[1], blocks)]
    if name == "col2im":  # F.fold: (N, C * kh * kw, L) -> (N, C, *output_size)
        x = _sym(args[0])
        size, k, dil, pad, st = (list(_arg(args, kwargs, i, n)) for i, n in
                                 enumerate(("output_size", "kernel_size", "dilation", "padding", "stride"), 1))
        if len(x) not in (2, 3):
            raise _Unknown
        size = [_nonneg(s, "an output size given to fold") for s in size]
        _eq_size(x[-1], _prod([_window(size[i], k[i], st[i], pad[i], dil[i]) for i in range(2)]))
        cols, kk = x[-2], _prod(k)
        if isinstance(cols, SymInt) or isinstance(kk, SymInt):  # (eager raises otherwise)
            holds = f"({_lit(cols)}) % ({_lit(kk)}) == 0"
            constrain(cols, holds, holds, "check", "fold: channels a multiple of the kernel's size")
        return [x[:-2] + (cols // kk,) + tuple(size)]
    if name in ("rnn_tanh", "rnn_relu", "gru", "lstm"):
        return _recurrent(name, args, kwargs, outs)
    if name == "tensor_split":
        return _tensor_split(args, kwargs, outs)
    if name in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices"):
        return _pool(name.replace("_with_indices", ""), args, kwargs, outs)
    if name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
                "adaptive_max_pool2d", "adaptive_max_pool3d"):
        return _adaptive(name, args, kwargs, outs)
    if name == "repeat":
        shape, reps = _sym(args[0]), _sizes(args, kwargs, 1, "repeats")
        if len(reps) < len(shape):
            raise _Unknown
        shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
        return [tuple(s * _nonneg(r, "a count given to repeat") for s, r in zip(shape, reps))]
    if name == "stack":
        tensors = _arg(args, kwargs, 0, "tensors")
        shapes = [_sym(t) for t in tensors]
        if not shapes or any(len(s) != len(shapes[0]) for s in shapes):
            raise _Unknown
        shape = tuple(shapes[0])
        for s in shapes[1:]:
            shape = tuple(_eq_size(a, b) for a, b in zip(shape, s))
        d = _dim(_arg(args, kwargs, 1, "dim", 0), len(shape) + 1)
        return [shape[:d] + (len(tensors),) + shape[d:]]
    if name == "narrow":
        shape = _sym(args[0])
        start = _arg(args, kwargs, 2, "start")
        if isinstance(start, torch.Tensor) or type(start).__name__ == "TensorProxy":
            raise _Unknown
        d = _dim(_const(args, kwargs, 1, "dim"), len(shape))
        return [shape[:d] + (_nonneg(_arg(args, kwargs, 3, "length"), "length of narrow"),) + shape[d + 1:]]
    if name == "chunk":
        shape = _sym(args[0])
        chunks = _arg(args, kwargs, 1, "chunks")
        d = _dim(_arg(args, kwargs, 2, "dim", 0), len(shape))
        size, n = shape[d], len(outs)
        if not isinstance(size, SymInt):
            return [shape[:d] + (o.meta.shape[d],) + shape[d + 1:] for o in outs]
        if size == 0:  # (a decision) an empty dim: one empty piece
            raise _Unknown
        piece = (size + chunks - 1) // chunks
        bool((size + piece - 1) // piece == n)  # the number of pieces is a decision
        return [shape[:d] + ((piece if i < n - 1 else size - piece * (n - 1)),) + shape[d + 1:] for i in range(n)]
    if name == "unbind":
        shape = _sym(args[0])
        d = _dim(_arg(args, kwargs, 1, "dim", 0), len(shape))
        specialize(shape[d], "unbind(): the number of pieces")
        return [shape[:d] + shape[d + 1:]] * len(outs)
    if name in ("movedim", "moveaxis"):
        return [_movedim(_sym(args[0]), _arg(args, kwargs, 1, "source"), _arg(args, kwargs, 2, "destination"))]
    if name == "diagonal":
        return [_diagonal(_sym(args[0]), _arg(args, kwargs, 1, "offset", 0), _arg(args, kwargs, 2, "dim1", 0),
                          _arg(args, kwargs, 3, "dim2", 1))]
    if name == "pad":
        shape, pad = list(_sym(args[0])), list(_arg(args, kwargs, 1, "pad"))
        if len(pad) % 2 or len(pad) // 2 > len(shape):
            raise _Unknown
        for i in range(len(pad) // 2):
            shape[-1 - i] = shape[-1 - i] + pad[2 * i] + pad[2 * i + 1]
        return [tuple(shape)]
    if name == "topk":
        shape = _sym(args[0])
        k = _nonneg(_arg(args, kwargs, 1, "k"), "k of topk")
        d = _dim(_const(args, kwargs, 2, "dim", -1), len(shape)) if shape else 0
        return [shape[:d] + (k,) + shape[d + 1:] if shape else ()] * len(outs)
    if name in ("sort", "argsort", "msort", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "flip", "fliplr",
                "flipud", "roll"):
        return [_sym(args[0])] * len(outs)
    if name in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "randint_like", "bernoulli",
                "dropout1d", "dropout2d", "alpha_dropout", "normalize", "local_response_norm", "batch_norm",
                "instance_norm", "prelu"):
        return [_sym(args[0])]
    if name in ("zeros", "ones", "empty", "rand", "randn"):
        return [tuple(_nonneg(s, f"a size given to {name}") for s in _sizes(args, kwargs, 0, "size"))]
    if name == "full":
        size = _arg(args, kwargs, 0, "size")
        return [tuple(_nonneg(s, "a size given to full") for s in size)]
    if name in ("new_zeros", "new_ones", "new_empty"):
        return [tuple(_nonneg(s, f"a size given to {name}") for s in _sizes(args, kwargs, 1, "size"))]
    if name == "new_full":
        return [tuple(_nonneg(s, "a size given to new_full") for s in _arg(args, kwargs, 1, "size"))]
    if name == "flatten":
        shape = _sym(args[0])
        nd = len(shape)
        start = _dim(_arg(args, kwargs, 1, "start_dim", 0), nd) if nd else 0
        end = _dim(_arg(args, kwargs, 2, "end_dim", -1), nd) if nd else 0
        if nd == 0:
            return [(1,)]
        return [shape[:start] + (_prod(shape[start:end + 1]),) + shape[end + 1:]]
    if name == "interpolate":
        return [_interpolate(args, kwargs)]
    raise _Unknown


def _interpolate(args, kwargs):
    x = _sym(args[0])
    n = len(x) - 2
    size, scale = _arg(args, kwargs, 1, "size"), _arg(args, kwargs, 2, "scale_factor")
    if n < 1:
        raise _Unknown
    if size is not None:
        return x[:2] + tuple(_ntuple(size, n))
    if scale is None or kwargs.get("recompute_scale_factor") is False:
        raise _Unknown
    scales = _ntuple(scale, n)
    # torch: floor(size * scale) in double precision (math.floor of a symbolic float records it)
    return x[:2] + tuple(math.floor(s * float(f)) for s, f in zip(x[2:], scales))
