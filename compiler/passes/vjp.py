"""The backward of a fusion region, built from per-prim vector-Jacobian products (VJPs).

`backward_trace(region)` returns a trace `backward(*region inputs, *grads of its differentiable outputs)`
that recomputes the region's prims (they are cheap and fuse; only the region's inputs are saved) and then
applies each prim's VJP rule in reverse order, accumulating gradients per proxy. The trace is a region of
prims like the forward one, so the fusing executor compiles it the same way: the backward is fused too.

A rule is written with prims, recorded on proxies as any decomposition is. Each rule returns the gradient
of every tensor argument (None where the argument gets none); gradients are reduced back over broadcast
dimensions and cast back to the argument's dtype. Formulas follow PyTorch's derivatives (maximum splits the
gradient of ties in half, amax divides it between the maxima, floor/ceil/sign give zeros), so results equal
eager up to float rounding. A prim without a rule makes `backward_trace` raise NoVJP with its name; the
executor then keeps the region's earlier path (torch.compile's own autograd).
"""
from __future__ import annotations

import math

import torch

from ..torchlang import prims
from ..core.proxies import TensorProxy
from ..symbolic.values import SYM_TYPES
from ..core.trace import Trace
from ..torchlang.recording import TracingState
from ..core.context import tracing
from .cse import cse, escaping
from .dce import dce


class NoVJP(Exception):
    """The region has a prim without a VJP rule (or a form the rules do not cover)."""


def _is_float(x) -> bool:
    return isinstance(x, TensorProxy) and (x.meta.dtype.is_floating_point or x.meta.dtype.is_complex)


# prims whose output carries no gradient (bool results)
NONDIFF = {prims.eq, prims.ne, prims.lt, prims.le, prims.gt, prims.ge, prims.logical_and, prims.logical_or,
           prims.logical_not}


def _zeros(shape, like):
    return prims.full(tuple(shape), 0.0, dtype=like.meta.dtype, device=like.device)


def _reduce_to(g, x):
    """`g` summed over the dimensions `x` was broadcast along, in x's shape and dtype."""
    shape = tuple(x.meta.shape)
    gshape = tuple(g.meta.shape)
    if gshape != shape:
        lead = gshape[:len(gshape) - len(shape)]
        dims = tuple(range(len(lead))) + tuple(len(lead) + i for i, s in enumerate(shape)
                                                if s == 1 and gshape[len(lead) + i] != 1)
        if dims:
            g = prims.sum(g, dims, True)
        if tuple(g.meta.shape) != shape:
            g = prims.reshape(g, shape)
    if g.meta.dtype != x.meta.dtype:
        g = prims.convert_element_type(g, x.meta.dtype)
    return g


def _arg(bsym, i, name, default=None):
    if len(bsym.args) > i:
        return bsym.args[i]
    return bsym.kwargs.get(name, default)


def _reduction_dims(x, dims):
    dims = tuple(dims) if dims is not None else ()
    if not dims:  # torch reduces every dimension for dim=()
        dims = tuple(range(x.meta.ndim))
    return tuple(d % max(x.meta.ndim, 1) for d in dims)


def _expand_back(g, x, dims, keepdim):
    """A reduction's output gradient broadcast back to the input's shape."""
    kshape = tuple(1 if i in dims else s for i, s in enumerate(x.meta.shape))
    if tuple(g.meta.shape) != kshape:
        g = prims.reshape(g, kshape)
    if kshape != tuple(x.meta.shape):
        g = prims.broadcast_to(g, tuple(x.meta.shape))
    return g


# ---- rules: (bsym, g, y) -> gradients of bsym.args in order (None for no gradient) ----
def _unary(fn):
    return lambda b, g, y: [fn(g, b.args[0], y)]


RULES = {
    prims.neg: _unary(lambda g, x, y: prims.neg(g)),
    prims.abs: _unary(lambda g, x, y: prims.mul(g, prims.sign(x))),
    prims.exp: _unary(lambda g, x, y: prims.mul(g, y)),
    prims.log: _unary(lambda g, x, y: prims.div(g, x)),
    prims.log1p: _unary(lambda g, x, y: prims.div(g, prims.add(x, 1.0))),
    prims.tanh: _unary(lambda g, x, y: prims.mul(g, prims.add(prims.neg(prims.mul(y, y)), 1.0))),
    prims.erf: _unary(lambda g, x, y: prims.mul(g, prims.mul(prims.exp(prims.neg(prims.mul(x, x))),
                                                              2.0 / math.sqrt(math.pi)))),
    prims.sqrt: _unary(lambda g, x, y: prims.div(g, prims.mul(y, 2.0))),
    prims.rsqrt: _unary(lambda g, x, y: prims.mul(prims.mul(g, -0.5), prims.mul(prims.mul(y, y), y))),
    prims.sin: _unary(lambda g, x, y: prims.mul(g, prims.cos(x))),
    prims.cos: _unary(lambda g, x, y: prims.mul(g, prims.neg(prims.sin(x)))),
    prims.reciprocal: _unary(lambda g, x, y: prims.mul(prims.neg(g), prims.mul(y, y))),
    prims.sigmoid: _unary(lambda g, x, y: prims.mul(g, prims.mul(prims.add(prims.neg(y), 1.0), y))),
    prims.floor: _unary(lambda g, x, y: _zeros(x.meta.shape, g)),
    prims.ceil: _unary(lambda g, x, y: _zeros(x.meta.shape, g)),
    prims.sign: _unary(lambda g, x, y: _zeros(x.meta.shape, g)),
    prims.clone: _unary(lambda g, x, y: g),
    prims.full: lambda b, g, y: [],  # no tensor arguments
}


def _rule(*symbols):
    def register(fn):
        for s in symbols:
            RULES[s] = fn
        return fn
    return register


@_rule(prims.add, prims.sub)
def _add_sub(b, g, y):
    if b.kwargs:
        raise NoVJP(f"{b.symbol.name} with {sorted(b.kwargs)}")
    a, c = b.args
    return [g, prims.neg(g) if b.symbol is prims.sub and isinstance(c, TensorProxy) else g]


@_rule(prims.mul)
def _mul(b, g, y):
    a, c = b.args
    return [prims.mul(g, c) if isinstance(a, TensorProxy) else None,
            prims.mul(g, a) if isinstance(c, TensorProxy) else None]


@_rule(prims.div)
def _div(b, g, y):
    if b.kwargs:
        raise NoVJP(f"{b.symbol.name} with {sorted(b.kwargs)}")
    a, c = b.args
    ga = prims.div(g, c) if isinstance(a, TensorProxy) else None
    gc = prims.neg(prims.mul(g, prims.div(prims.div(a, c), c))) if isinstance(c, TensorProxy) else None
    return [ga, gc]


@_rule(prims.pow)
def _pow(b, g, y):
    a, e = b.args
    if not isinstance(e, TensorProxy):
        if e == 0:
            return [_zeros(a.meta.shape, g), None]
        return [prims.mul(g, prims.mul(prims.pow(a, e - 1), e))]
    zero = _zeros((), g)
    ga = prims.mul(g, prims.where(prims.eq(e, 0.0), zero, prims.mul(e, prims.pow(a, prims.sub(e, 1.0)))))
    ge = prims.mul(g, prims.where(prims.logical_and(prims.eq(a, 0.0), prims.ge(e, 0.0)), zero,
                                  prims.mul(y, prims.log(a))))
    return [ga, ge]


@_rule(prims.maximum, prims.minimum)
def _max_min(b, g, y):
    a, c = b.args
    wins = prims.gt if b.symbol is prims.maximum else prims.lt
    zero, half = _zeros((), g), prims.mul(g, 0.5)

    def part(x, other):
        return prims.where(wins(x, other), g, prims.where(prims.eq(x, other), half, zero))
    return [part(a, c), part(c, a)]


@_rule(prims.where)
def _where(b, g, y):
    c, a, e = b.args
    zero = _zeros((), g)
    return [None, prims.where(c, g, zero) if isinstance(a, TensorProxy) else None,
            prims.where(c, zero, g) if isinstance(e, TensorProxy) else None]


@_rule(prims.convert_element_type)
def _convert(b, g, y):
    return [g]  # cast back to the argument's dtype by _reduce_to


@_rule(prims.reshape, prims.unsqueeze, prims.squeeze)
def _reshape(b, g, y):
    return [prims.reshape(g, tuple(b.args[0].meta.shape))]


@_rule(prims.permute)
def _permute(b, g, y):
    dims = [d % max(y.meta.ndim, 1) for d in _arg(b, 1, "dims")]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return [prims.permute(g, tuple(inverse))]


@_rule(prims.broadcast_to)
def _broadcast(b, g, y):
    return [g]  # summed back over the broadcast dimensions by _reduce_to


@_rule(prims.slice_in_dim)
def _narrow(b, g, y):
    x, dim, start, length = (_arg(b, 0, "input"), _arg(b, 1, "dim"), _arg(b, 2, "start"), _arg(b, 3, "length"))
    dim = dim % x.meta.ndim
    size = x.meta.shape[dim]
    start = start % size if start < 0 else start
    parts = []
    for lo, n in ((0, start), (None, length), (start + length, size - start - length)):
        if lo is None:
            parts.append(g)
        elif n:
            shape = list(x.meta.shape)
            shape[dim] = n
            parts.append(_zeros(shape, g))
    return [prims.cat(parts, dim) if len(parts) > 1 else g, None, None, None]


@_rule(prims.cat)
def _cat(b, g, y):
    tensors, dim = _arg(b, 0, "tensors"), _arg(b, 1, "dim", 0)
    dim = dim % y.meta.ndim
    grads, offset = [], 0
    for t in tensors:
        if t.meta.ndim == 1 and t.meta.shape[0] == 0:  # torch.cat skips legacy empty 1-D tensors (any dim)
            grads.append(None)
            continue
        n = t.meta.shape[dim] if t.meta.ndim else 0
        grads.append(prims.slice_in_dim(g, dim, offset, n))
        offset += n
    return [grads]


@_rule(prims.matmul)
def _matmul(b, g, y):
    a, c = b.args
    if a.meta.ndim < 2 or c.meta.ndim < 2:
        raise NoVJP("prims.matmul of a 1-D operand")

    def swap(t):
        perm = list(range(t.meta.ndim))
        perm[-2], perm[-1] = perm[-1], perm[-2]
        return prims.permute(t, tuple(perm))
    if c.meta.ndim == 2 and a.meta.ndim > 2:  # (..., M, K) @ (K, N): one mm over the flattened rows
        k, n = c.meta.shape
        rows_a = prims.reshape(a, (-1, k))
        rows_g = prims.reshape(g, (-1, n))
        return [prims.matmul(g, swap(c)), prims.matmul(swap(rows_a), rows_g)]
    return [prims.matmul(g, swap(c)), prims.matmul(swap(a), g)]  # batch dims summed back by _reduce_to


@_rule(prims.sum)
def _sum(b, g, y):
    x = b.args[0]
    dims = _reduction_dims(x, _arg(b, 1, "dim"))
    return [_expand_back(g, x, dims, _arg(b, 2, "keepdim", False))]


@_rule(prims.amax, prims.amin)
def _amax(b, g, y):
    x = b.args[0]
    dims = _reduction_dims(x, _arg(b, 1, "dim"))
    keepdim = _arg(b, 2, "keepdim", False)
    mask = prims.convert_element_type(prims.eq(x, _expand_back(y, x, dims, keepdim)), g.meta.dtype)
    count = _expand_back(prims.sum(mask, dims, True), x, dims, True)
    return [prims.div(prims.mul(_expand_back(g, x, dims, keepdim), mask), count)]


@_rule(prims.var)
def _var(b, g, y):
    x = b.args[0]
    dims = _reduction_dims(x, _arg(b, 1, "dim"))
    correction = b.kwargs.get("correction", 1)
    keepdim = b.kwargs.get("keepdim", _arg(b, 2, "keepdim", False) if len(b.args) > 2 else False)
    if set(b.kwargs) - {"correction", "keepdim"} or len(b.args) > 2 or correction is None:
        raise NoVJP("prims.var with unbiased/positional options")
    n = math.prod(x.meta.shape[d] for d in dims)
    if n - correction <= 0:
        raise NoVJP("prims.var with no degrees of freedom")
    mean = _expand_back(prims.div(prims.sum(x, dims, True), n), x, dims, True)
    return [prims.mul(_expand_back(g, x, dims, keepdim), prims.mul(prims.sub(x, mean), 2.0 / (n - correction)))]


def differentiable_reach(region) -> dict[str, frozenset]:
    """For every proxy of the region: the indices of the inputs (requiring grad) that reach it along a
    differentiable path. An output no such input reaches is not differentiable (eager: requires_grad False)."""
    reach = {p.name: frozenset([i]) for i, p in enumerate(region.inputs) if _is_float(p) and p.meta.requires_grad}
    for b in region.bsyms:
        got = frozenset()
        if b.symbol not in NONDIFF:
            for a in b.tensor_args():
                got |= reach.get(a.name, frozenset())
        for o in b.tensor_outputs():
            if _is_float(o) and got:
                reach[o.name] = got
    return reach


# prims whose eager op's derivative reads its result (derivatives.yaml: `result`), so eager saves that tensor
_SAVES_ITS_RESULT = frozenset((prims.exp, prims.tanh, prims.sigmoid, prims.sqrt, prims.rsqrt, prims.reciprocal))


class RegionGradients:
    """What autograd needs around a region's VJP trace, whichever executor runs it: which outputs are
    differentiable, which inputs each output's gradient reaches (an input reached by no output that got a
    gradient gets None, as in eager, not zeros), and which inputs the trace writes back later (the forward
    saves their old value: the VJP reads that)."""

    def __init__(self, region, trace: Trace):
        self.trace = trace
        reach = differentiable_reach(region)
        self.diff = [o.name in reach for o in region.outputs]
        self.reach = [reach.get(o.name, frozenset()) for o in region.outputs]
        self.grad_meta = [(tuple(o.meta.shape), o.meta.dtype, o.device) for o in region.outputs if o.name in reach]
        self.written_later = {i for i, p in enumerate(region.inputs) if p.name in getattr(region, "written_later", ())}
        # differentiable outputs that eager's op saves for its backward (`tanh`'s result): the forward saves them
        # too, unused, so that a write into one before backward raises autograd's error there, as in eager
        made_by = {o.name: b.symbol for b in region.bsyms for o in b.tensor_outputs()}
        self.version_checked = [i for i, o in enumerate(region.outputs)
                                if self.diff[i] and made_by.get(o.name) in _SAVES_ITS_RESULT]

    def gradient_args(self, grads, contiguous: bool = True) -> tuple[frozenset, list]:
        """For autograd's output gradients: the inputs they reach, and the VJP trace's gradient arguments
        (contiguous unless told otherwise; zeros for a differentiable output that got none)."""
        got = frozenset().union(*[r for g, r in zip(grads, self.reach) if g is not None])
        diff_grads = [g for g, d in zip(grads, self.diff) if d]
        args = [(g.contiguous() if contiguous else g) if g is not None else torch.zeros(shape, dtype=dtype, device=device)
                for g, (shape, dtype, device) in zip(diff_grads, self.grad_meta)]
        return got, args


def _joined(name: str, grads: dict, pieces: dict):
    """The gradient of `name`, its narrowings' gradients (`x.split(n)`'s parts) added in first: one cat of the
    parts and zeros for the gaps where they do not overlap (eager's split backward), instead of a zero-padded
    copy of x per part summed. Called while recording."""
    parts = pieces.pop(name, None)
    if parts:
        x = _arg(parts[0][0], 0, "input")
        spans = sorted(((_arg(b, 1, "dim") % x.meta.ndim, _arg(b, 2, "start") % x.meta.shape[_arg(b, 1, "dim")]
                         if _arg(b, 2, "start") < 0 else _arg(b, 2, "start"), _arg(b, 3, "length"), g)
                        for b, g, _ in parts), key=lambda s: (s[0], s[1]))
        dim = spans[0][0]
        disjoint = all(d == dim for d, *_ in spans) and \
            all(a[1] + a[2] <= b[1] for a, b in zip(spans, spans[1:]))
        if disjoint:
            joined, at = [], 0
            for _, start, length, g in spans:
                if start > at:
                    shape = list(x.meta.shape)
                    shape[dim] = start - at
                    joined.append(_zeros(shape, g))
                joined.append(g)
                at = start + length
            if at < x.meta.shape[dim]:
                shape = list(x.meta.shape)
                shape[dim] = x.meta.shape[dim] - at
                joined.append(_zeros(shape, joined[-1]))
            total = prims.cat(joined, dim) if len(joined) > 1 else joined[0]
        else:
            total = None
            for b, g, y in parts:
                gx = RULES[b.symbol](b, g, y)[0]
                total = gx if total is None else prims.add(total, gx)
        total = _reduce_to(total, x)
        grads[name] = prims.add(grads[name], total) if name in grads else total
    return grads.get(name)


def _weight_layouts(recorded: Trace, grads: dict, inputs) -> None:
    """An input's gradient `(a @ b).T` (a linear layer's weight, `x @ w.T`) becomes `b.T @ a.T`: the same products,
    laid out as the weight is, as eager's `grad.T @ x` is; a transposed view would be copied again by autograd
    (AccumulateGrad keeps a parameter's gradient in the parameter's layout). Only where the product has no other
    reader. Called while recording."""
    made = {o.name: b for b in recorded.bsyms for o in b.tensor_outputs()}
    reads: dict[str, int] = {}
    for b in recorded.bsyms:
        for a in b.tensor_args():
            reads[a.name] = reads.get(a.name, 0) + 1
    for p in inputs:
        g = grads.get(p.name)
        t = made.get(g.name) if g is not None else None
        if t is None or t.symbol is not prims.permute or tuple(_arg(t, 1, "dims")) not in ((1, 0), (-1, -2), (1, -2), (-1, 0)):
            continue
        m = made.get(t.args[0].name)
        if m is None or m.symbol is not prims.matmul or reads.get(m.tensor_outputs()[0].name) != 1 or \
                reads.get(g.name) or any(a.meta.ndim != 2 for a in m.args) or \
                sum(1 for q in grads.values() if q is g) != 1:
            continue
        a, b = m.args
        grads[p.name] = prims.matmul(prims.permute(b, (1, 0)), prims.permute(a, (1, 0)))


def backward_trace(region, name: str = "backward") -> Trace:
    """backward(*saved inputs, *grads of the differentiable outputs) -> (grad of each input or None,). The
    trace's `saved` lists the indices of the region inputs it reads (the forward saves only those)."""
    missing = sorted({b.symbol.name for b in region.bsyms if b.symbol not in RULES and b.symbol not in NONDIFF})
    if missing:
        raise NoVJP(f"no VJP rule for {', '.join(missing)}")
    for b in region.bsyms:
        if any(isinstance(a, SYM_TYPES) for a in b.flat_args()):
            raise NoVJP(f"{b.symbol.name} has symbolic number arguments")
    reach = differentiable_reach(region)
    diff_outputs = [o for o in region.outputs if o.name in reach]
    with torch.no_grad():  # (the state notes the grad mode it starts in)
        state = TracingState(decompose=False)
    used = [p.name for b in region.bsyms for p in (*b.tensor_args(), *b.tensor_outputs())]
    state.trace._counter = 1 + max((int(n[1:]) for n in used if n[:1] == "t" and n[1:].isdigit()), default=0)
    grads: dict[str, TensorProxy] = {}
    with torch.no_grad(), tracing(state):
        grad_args = []
        for o in diff_outputs:
            g = TensorProxy(f"grad_{o.name}", torch.empty(tuple(o.meta.shape), dtype=o.meta.dtype, device="meta"),
                            o.device)
            grad_args.append(g)
            grads[o.name] = g
        pieces: dict[str, list] = {}  # name -> gradients of its narrowings, joined when its gradient is read
        for b in reversed(region.bsyms):
            if b.symbol in NONDIFF:
                continue
            outs = b.tensor_outputs()
            if len(outs) != 1 or _joined(outs[0].name, grads, pieces) is None:
                continue
            y = outs[0]
            if any(a.name == y.name for a in b.tensor_args()):
                continue  # an op that returned its input (a cast to its own dtype): the gradient is the same
            x = _arg(b, 0, "input")
            if b.symbol is prims.slice_in_dim and isinstance(x, TensorProxy) and x.name in reach:
                pieces.setdefault(x.name, []).append((b, grads[y.name], y))
                continue
            per_arg = RULES[b.symbol](b, grads[y.name], y)
            for arg, ga in zip(b.args, per_arg):
                pairs = zip(arg, ga) if isinstance(arg, (list, tuple)) and isinstance(ga, list) else [(arg, ga)]
                for x, gx in pairs:
                    if gx is None or not isinstance(x, TensorProxy) or x.name not in reach:
                        continue
                    gx = _reduce_to(gx, x)
                    grads[x.name] = prims.add(grads[x.name], gx) if x.name in grads else gx
        for p in region.inputs:
            _joined(p.name, grads, pieces)
        _weight_layouts(state.trace, grads, [p for p in region.inputs if p.name in reach])
    for b in state.trace.bsyms:
        b.location = None  # (the recorder takes the caller's line; the VJP belongs to no user line)
    bw = Trace(name)
    bw.args = list(region.inputs) + grad_args
    bw.bsyms = list(region.bsyms) + state.trace.bsyms
    bw.output = tuple(grads.get(p.name) if p.name in reach else None for p in region.inputs)
    bw._counter = state.trace._counter
    out = dce(cse(bw))  # (cse: a rule's own `sum(x)` is the forward's, read again)
    used = {p.name for b in out.bsyms for p in b.tensor_args()} | {p.name for p in out.output if p is not None}
    out.saved = [i for i, p in enumerate(region.inputs) if p.name in used]  # what the forward must keep
    out.args = [region.inputs[i] for i in out.saved] + grad_args
    out.header = f"backward of a fusion region from per-prim VJPs ({len(state.trace.bsyms)} prims)"
    return out


# The forward results the backward reads from the forward instead of computing them again: a matmul costs more than
# keeping its result, and a reduction reads its whole input; the pointwise ops between them are recomputed (they
# fuse into the backward's kernels). AOTAutograd's partitioner makes the same choice for inductor.
_KEPT_RESULTS = frozenset(("prims.matmul", "prims.sum", "prims.var", "prims.amax", "prims.amin", "prims.prod"))


def _reduces_nothing(b) -> bool:
    """A reduction over dimensions of size 1 (or none): its result holds its input's elements, and a compiled graph
    may return it as a view of its input, which a later write into that input would change before the backward."""
    if b.symbol.name == "prims.matmul":
        return False
    x = b.args[0]
    if x.meta.ndim == 0:  # (a 0-d tensor reduced over dim 0 or -1)
        return True
    dims = _reduction_dims(x, _arg(b, 1, "dim"))
    return all(x.meta.shape[d] == 1 for d in dims)


def with_residuals(region, trace: Trace) -> Trace | None:
    """`trace` (backward_trace's, which recomputes the region from its inputs) reading the region's matmul and
    reduction results as arguments instead: backward(*saved inputs, *residuals, *grads). Its `residuals` are those
    region values (the forward returns them too) and `saved` the inputs it still reads. None where no such result
    is read. A result the caller also receives, or that a returned view shares memory with, is not a residual: the
    caller may write into it before the backward runs (autograd would then refuse a backward that eager runs)."""
    forward = {o.name for b in region.bsyms for o in b.tensor_outputs()}
    returned = escaping(region.outputs, region.bsyms)  # (and the bases of returned views: they share memory)
    residuals = []
    for b in trace.bsyms:
        outs = b.tensor_outputs()
        if b.symbol.name in _KEPT_RESULTS and len(outs) == 1 and outs[0].name in forward and \
                outs[0].name not in returned and not _reduces_nothing(b):
            residuals.append(outs[0])
    if not residuals:
        return None
    kept = {p.name for p in residuals}
    grads = trace.args[len(trace.saved):]
    cut = Trace(trace.name)
    cut.args = list(region.inputs) + residuals + list(grads)
    cut.bsyms = [b for b in trace.bsyms if not any(o.name in kept for o in b.tensor_outputs())]
    cut.output = trace.output
    cut._counter = trace._counter
    out = dce(cut)
    used = {p.name for b in out.bsyms for p in b.tensor_args()} | {p.name for p in out.output if p is not None}
    out.residuals = [p for p in residuals if p.name in used]
    out.saved = [i for i, p in enumerate(region.inputs) if p.name in used]
    out.args = [region.inputs[i] for i in out.saved] + out.residuals + list(grads)
    out.header = f"{trace.header}, reading {len(out.residuals)} matmul and reduction results of the forward"
    return out
