"""Fusion regions: maximal groups of fusible prims of a functional trace, each one bound symbol.

A fusible prim joins the open region that produces its inputs, or the first open region after every group
it depends on, so no region depends on a group placed after it (no cycles) and fusible ops only ever move
earlier than they were, never later. Barriers close every open region: effects (grad-mode switches) and
in-place ops (write-backs, writes into fresh clones); random ops do not (no fusible op draws random numbers).
An op outside the fusible set counts as a writer of its tensor arguments (batch norm updates its running
statistics without an in-place tag), so no later read of them moves before it, unless its schema says it
returns a view (or may: `to`, `contiguous`). Torch view ops that narrow or reshape their argument (`view`,
`split`, `x[..., :4]`; read from the meta tensors) join regions as the prim they are. Views that are
returned stay out of regions (a region's outputs are fresh tensors; the caller must get a view where eager
gave one). A region with fewer than two computing ops is not worth a kernel and runs op by op.

Each region prints as one call with its prims as the nested (commented) body, so `compiler.last_traces`
shows what was fused.
"""
from __future__ import annotations

import torch

from ..torchlang import prims
from ..core import tree as pytree
from ..core.proxies import TensorProxy
from ..core.symbols import BoundSymbol, Symbol, Tag
from ..core.trace import Trace

_VIEW_PRIMS = {prims.reshape, prims.permute, prims.broadcast_to, prims.unsqueeze, prims.squeeze, prims.slice_in_dim}
_COMPUTE_PRIMS = {getattr(prims, n) for n in (
    "abs neg exp log log1p tanh erf sqrt rsqrt sin cos reciprocal sigmoid floor ceil sign logical_not add sub "
    "mul div pow remainder maximum minimum eq ne lt le gt ge logical_and logical_or where sum amax amin prod var "
    "cat convert_element_type full clone").split()}
FUSIBLE = _VIEW_PRIMS | _COMPUTE_PRIMS
# Effects and writes close every open region. Random ops do not: no fusible op draws random numbers, so moving
# one across a random op leaves the RNG order as it was (F.scaled_dot_product_attention is tagged random for its
# dropout: a barrier split every attention block's regions in two).
_BARRIER = Tag.EFFECT | Tag.INPLACE


def _may_write(bsym: BoundSymbol) -> bool:
    """Whether an op outside the fusible set may write its tensor arguments. Prims write only when tagged
    in-place; a torch op whose schema says it returns a view (or may: `to`, `contiguous`, `reshape`) writes
    nothing; any other torch op may (batch norm writes its running statistics without an in-place tag)."""
    tags = bsym.symbol.tags
    if tags & Tag.INPLACE:
        return True
    return not tags & (Tag.PRIM | Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) and bsym.symbol.name not in _READS_ONLY


# torch ops known to only read their tensor arguments (their writing forms, `inplace=True`, are recorded as
# INPLACE variants): a `dropout(p=0.0)` between two layers (ViT's config) returns its input and must not cut the
# region around it
_READS_ONLY = frozenset(("F.dropout", "torch.dropout", "F.scaled_dot_product_attention"))


# what a fusing executor may add to FUSIBLE (its `fusible_extra`): inductor takes matmuls into regions (an
# extern mm call inside the compiled region), so a linear layer's bias, the residual and the norm that
# follow join one region instead of splitting it
MATMUL = {prims.matmul}


class Region:
    """A fusion region: its member bound symbols in order, inputs and outputs (filled by `fuse`)."""

    def __init__(self):
        self.bsyms: list[BoundSymbol] = []
        self.open = True
        self.inputs: list[TensorProxy] = []
        self.outputs: list[TensorProxy] = []
        self.written_later: set[str] = set()

    def computing(self) -> int:
        return sum(1 for b in self.bsyms if b.symbol in _COMPUTE_PRIMS or b.symbol in MATMUL)


def _escaping_views(trace: Trace) -> set[str]:
    """Names of view results the caller receives (directly or as the base of a returned view)."""
    escaping = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    views = set()
    for bsym in reversed(trace.bsyms):
        if bsym.symbol in _VIEW_PRIMS or bsym.symbol.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW):
            if any(o.name in escaping for o in bsym.tensor_outputs()):
                views.update(o.name for o in bsym.tensor_outputs())
                escaping.update(p.name for p in bsym.tensor_args())
    return views


def _same_view(made: torch.Tensor, of: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `made` is a view of `of` laid out as `b` (then both read the same elements; a reshape that
    copied may have `b`'s strides and read others)."""
    return made._is_view() and made._base is (of._base if of._is_view() else of) and \
        made.shape == b.shape and made.stride() == b.stride() and made.storage_offset() == b.storage_offset()


def _view_as_prim(x: TensorProxy, out: TensorProxy):
    """(prim, args) giving `out` from `x` with the same shape, strides and offset, where `out` is a narrowing
    of `x` along one dimension or a reshape of it; None otherwise. Read from the meta tensors, so any torch
    view op that is one of these (`view`, `split`, `chunk`, `narrow`, `x[..., :4]`) is covered."""
    xm, om = x.meta, out.meta
    if xm.dtype != om.dtype or x.dynamic or out.dynamic or x.sym_shape is not None or out.sym_shape is not None:
        return None
    if not om._is_view() or om._base is not (xm._base if xm._is_view() else xm):
        return None  # (x[[0, 2]] is tagged a view op but copies: its layout may still match a narrowing)
    with torch._C.DisableTorchFunction():
        if xm.ndim == om.ndim and xm.stride() == om.stride():
            dims = [d for d in range(xm.ndim) if xm.shape[d] != om.shape[d]]
            if len(dims) == 1 and xm.stride(dims[0]):
                d = dims[0]
                start, rest = divmod(om.storage_offset() - xm.storage_offset(), xm.stride(d))
                if rest == 0 and 0 <= start and start + om.shape[d] <= xm.shape[d]:
                    args = (x, d, start, om.shape[d])
                    if _same_view(torch.narrow(xm, *args[1:]), xm, om):
                        return prims.slice_in_dim, args
        if om.storage_offset() == xm.storage_offset() and om.numel() == xm.numel():
            try:
                made = torch.reshape(xm, tuple(om.shape))
            except RuntimeError:
                return None
            if _same_view(made, xm, om):
                return prims.reshape, (x, tuple(om.shape))
    return None


def _views_as_prims(trace: Trace) -> list[BoundSymbol]:
    """The trace's bound symbols, torch view ops that are a narrowing or a reshape of their tensor argument
    written as that prim (one per output), so that they can join regions (the views between a projection and
    attention, rotary embeddings' halves) instead of splitting them. Views the caller receives stay as they
    are."""
    escaping = _escaping_views(trace)
    out = []
    for b in trace.bsyms:
        tensors, outs = b.tensor_args(), b.tensor_outputs()
        if b.symbol.tags & Tag.PRIM or not b.symbol.tags & Tag.RETURNS_VIEW or b.symbol.tags & _BARRIER or \
                len(tensors) != 1 or not outs or b.kept_to_raise or any(o.name in escaping for o in outs):
            out.append(b)
            continue
        made = [_view_as_prim(tensors[0], o) for o in outs]
        if any(m is None for m in made):
            out.append(b)
            continue
        out.extend(BoundSymbol(prim, args, {}, o, [], b.location) for (prim, args), o in zip(made, outs))
    return out


def group(trace: Trace, fusible=FUSIBLE) -> list:
    """The trace's bound symbols as a list of Region and single BoundSymbol, in a valid execution order.

    A view prim of a value no open region computes (a weight's transpose, a bias's broadcast: views of
    inputs, recorded before the ops that read them) waits for its first reader and joins that reader's
    region, instead of sitting alone in an early region or joining an unrelated open one (whose output it
    would become: a copy). So does a `prims.full` (a scalar operand made a tensor: `0.5 * x`): in its
    reader's region it is a constant of the kernel, in another region's outputs a tensor in memory. It never waits past a
    barrier (flushed there, in order) or past an op outside the fusible set that reads it."""
    groups: list = []
    last_def: dict[str, int] = {}
    escaping = _escaping_views(trace)
    pending: dict[str, BoundSymbol] = {}  # waiting views, by output name, in trace order

    def close_all():
        for g in groups:
            if isinstance(g, Region):
                g.open = False

    def take_pending(names) -> list[BoundSymbol]:
        taken = []

        def visit(n):
            b = pending.pop(n, None)
            if b is not None:
                for a in b.tensor_args():
                    visit(a.name)
                taken.append(b)
        for n in names:
            visit(n)
        return taken

    def append_single(bsym):
        groups.append(bsym)
        for o in bsym.tensor_outputs():
            last_def[o.name] = len(groups) - 1

    for bsym in trace.bsyms:
        args = [a.name for a in bsym.tensor_args()]
        outs = [o.name for o in bsym.tensor_outputs()]
        is_fusible = bsym.symbol in fusible and not (bsym.symbol in _VIEW_PRIMS and set(outs) & escaping) and \
            not bsym.kept_to_raise  # (unused: a region would drop it, and eager may raise there)
        if bsym.symbol.tags & _BARRIER:
            close_all()
            for b in take_pending(list(pending)):
                append_single(b)
        if not is_fusible and _may_write(bsym):
            # it may write its arguments: views of them (a reshape may be a copy) are taken before it
            hit = set(args)
            for n, b in list(pending.items()):
                if hit & {a.name for a in b.tensor_args()}:
                    hit.add(n)
            for b in take_pending([n for n in list(pending) if n in hit]):
                append_single(b)
        if is_fusible and (bsym.symbol in _VIEW_PRIMS or bsym.symbol is prims.full) and not any(
                isinstance(groups[last_def[n]], Region) and groups[last_def[n]].open
                for n in args if n not in pending and n in last_def):
            pending[outs[0]] = bsym  # a view of no open region's value waits for its reader (one output each)
            continue
        if not is_fusible and not args and bsym.symbol.tags & (Tag.RANDOM | Tag.CREATION):
            # a value made from no tensor (dropout's noise, an arange) is made before the open regions, so the
            # fusible ops reading it join them instead of starting a region after it; it stays after every
            # random op before it (the draws keep their order) and after the last barrier (regions open after it)
            first_open = next((i for i, g in enumerate(groups) if isinstance(g, Region) and g.open), len(groups))
            last_random = max((i for i, g in enumerate(groups)
                               if not isinstance(g, Region) and g.symbol.tags & Tag.RANDOM), default=-1)
            at = max(first_open, last_random + 1)
            groups.insert(at, bsym)
            for n, i in last_def.items():
                if i >= at:
                    last_def[n] = i + 1
            for n in outs:
                last_def[n] = at
            continue
        waiting = take_pending(args)
        deps = max((last_def.get(n, -1) for b in [*waiting, bsym] for n in (a.name for a in b.tensor_args())),
                   default=-1)
        if not is_fusible:
            for b in waiting:
                append_single(b)
            groups.append(bsym)
            idx = len(groups) - 1
            for n in outs:
                if n not in args:  # (an op that returned its argument itself, `x.to(x.dtype)`, made no new value)
                    last_def[n] = idx
            if _may_write(bsym):
                for n in args:  # may write them (see module docstring)
                    last_def[n] = idx
            continue
        target = None
        if deps >= 0 and isinstance(groups[deps], Region) and groups[deps].open:
            target = deps
        else:
            target = next((i for i in range(deps + 1, len(groups)) if isinstance(groups[i], Region)
                           and groups[i].open), None)
        if target is None:
            groups.append(Region())
            target = len(groups) - 1
        for b in [*waiting, bsym]:
            groups[target].bsyms.append(b)
            for o in b.tensor_outputs():
                last_def[o.name] = target
    for b in take_pending(list(pending)):
        append_single(b)
    return groups


def _components(region: Region) -> list:
    """A region split into parts that share no data. With autograd, one compiled region is one backward
    node: it would give zero gradients (not None, as eager does) to inputs feeding only unused outputs."""
    parent = list(range(len(region.bsyms)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    producer: dict[str, int] = {}
    for i, b in enumerate(region.bsyms):
        for a in b.tensor_args():
            if a.name in producer:
                parent[find(i)] = find(producer[a.name])
        for o in b.tensor_outputs():
            producer[o.name] = i
    parts: dict[int, Region] = {}
    for i, b in enumerate(region.bsyms):
        parts.setdefault(find(i), Region()).bsyms.append(b)
    return list(parts.values())


def _seal(g: Region, used_after: set, written: set) -> bool:
    """Fill the region's inputs (read before it) and outputs (needed after it); False if it has none."""
    defined, inputs, seen = set(), [], set()
    for b in g.bsyms:
        for a in b.tensor_args():
            if a.name not in defined and a.name not in seen:
                seen.add(a.name)
                inputs.append(a)
        defined.update(o.name for o in b.tensor_outputs())
    outputs, seen_out = [], set()
    for b in g.bsyms:
        for o in b.tensor_outputs():
            if o.name in used_after and o.name not in seen_out:
                seen_out.add(o.name)
                outputs.append(o)
    g.inputs, g.outputs = inputs, outputs
    g.written_later = {p.name for p in inputs if p.name in written}  # inputs written back after the region
    return bool(outputs)


def _not_read_by_recorded_ops(region: Region) -> set[str]:
    """The region's inputs that no op autograd records reads, directly or through the region's views: eager saves
    none of them for its backward (`sigmoid(a) * w` saves sigmoid's result), though the region's VJP may keep them
    to compute again. One it reads (`a * w` saves `a`) eager may save: a write into it later raises there too."""
    origin = {p.name: p.name for p in region.inputs}
    read = set()
    for b in region.bsyms:
        args = b.tensor_args()
        if b.symbol in _VIEW_PRIMS or b.symbol.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW):
            for o in b.tensor_outputs():
                if args and args[0].name in origin:
                    origin[o.name] = origin[args[0].name]
        elif any(o.requires_grad for o in b.tensor_outputs()):
            read.update(origin[a.name] for a in args if a.name in origin)
    return {p.name for p in region.inputs} - read


def fuse(trace: Trace, executor, *, min_computing: int = 2, continues: bool = False) -> Trace:
    """The trace with each worthwhile region replaced by one bound symbol that `executor` claims.

    With autograd, a region is one backward node. Its parts that share no data (the query, key and value
    projections of one input) stay one region where the executor differentiates it whole with None for the
    inputs no output that got a gradient reaches, as eager gives (`executor.differentiates(region)`: the
    inductor executor's per-prim VJP); otherwise they are regions of their own (a backward node would give
    zeros instead). `continues`: the trace is a segment the call goes on after (it ends at a data-dependent read),
    whose later segments may write in place any tensor a region read: with autograd, the inputs a region's VJP
    keeps that eager would not have saved are kept as their value now (written_later)."""
    flat: list = []
    groups = group(trace.copy_with(_views_as_prims(trace), trace.header),
                   FUSIBLE | getattr(executor, "fusible_extra", frozenset()))
    grad = torch.is_grad_enabled() and any(isinstance(a, TensorProxy) and a.requires_grad for a in trace.args)
    whole = getattr(executor, "differentiates", None) if grad else None
    if grad and whole is None:
        groups = [part for g in groups for part in (_components(g) if isinstance(g, Region) else [g])]
    for g in groups:
        if isinstance(g, Region) and g.computing() < min_computing and (whole is None or len(_components(g)) == 1):
            flat.extend(g.bsyms)
        else:
            flat.append(g)
    # what each region reads from before it and must hand to what comes after it
    used_after: list[set] = [set()] * len(flat)
    needed = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    for i in range(len(flat) - 1, -1, -1):
        used_after[i] = set(needed)
        members = flat[i].bsyms if isinstance(flat[i], Region) else [flat[i]]
        for b in members:
            needed.update(a.name for a in b.tensor_args())
    written = {b.kwargs["out"].name for b in trace.bsyms if b.symbol is prims.copy_to_out_}
    out = []
    count = 0
    for i, g in enumerate(flat):
        if not isinstance(g, Region):
            out.append(g)
            continue
        parts = [g]
        if whole is not None:
            parts = _components(g)
            if len(parts) > 1 and _seal(g, used_after[i], written) and whole(g):
                parts = [g]
        for part in parts:
            if part.computing() < min_computing:
                out.extend(part.bsyms)
                continue
            if not _seal(part, used_after[i], written):
                continue
            if continues and grad:
                part.written_later |= _not_read_by_recorded_ops(part)
            sym = Symbol(f"{executor.name}_fusion_{count}", None, Tag.NONE)
            sym.region = part
            sym.executor = executor
            count += 1
            out.append(BoundSymbol(sym, tuple(part.inputs), {}, tuple(part.outputs), list(part.bsyms),
                                   part.bsyms[0].location))
    fused = trace.copy_with(out, f"fusion regions for {executor.name}: {count}")
    check_writebacks(fused)
    return fused


def check_writebacks(trace: Trace) -> None:
    """The write-back sanity check (seed 1193), on the fused trace: an input's write-back comes after every
    read of that input's old value, nothing fused reads the input after it, and each input is written back
    once. The kv-cache pattern (index_copy_ into a cache, then attention reading it) passes: the reads see the
    new value, which is a separate tensor until the write-back at the end."""
    from ..core.errors import CompilerError

    written: dict[str, int] = {}
    for i, bsym in enumerate(trace.bsyms):
        if bsym.symbol is prims.copy_to_out_:
            name = bsym.kwargs["out"].name
            if name in written:
                raise CompilerError(f"internal error: {name} is written back twice\n{trace}")
            written[name] = i
            continue
        if isinstance(getattr(bsym.symbol, "region", None), Region):
            late = [a.name for a in bsym.tensor_args() if a.name in written]
            if late:
                raise CompilerError(f"internal error: fusion region {bsym.symbol.name} reads {late} after their "
                                    f"write-back\n{trace}")
