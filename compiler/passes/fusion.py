"""Fusion regions: maximal groups of fusible prims of a functional trace, each one bound symbol.

A fusible prim joins the open region that produces its inputs, or the first open region after every group
it depends on, so no region depends on a group placed after it (no cycles) and fusible ops only ever move
earlier than they were, never later. Barriers close every open region: random ops (RNG order), grad-mode
switches, in-place ops (write-backs, writes into fresh clones). An op outside the fusible set counts as a
writer of its tensor arguments (batch norm updates its running statistics without an in-place tag), so no
later read of them moves before it. Views that are returned stay out of regions (a region's outputs are
fresh tensors; the caller must get a view where eager gave one). A region with fewer than two computing
ops is not worth a kernel and runs op by op.

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
_BARRIER = Tag.RANDOM | Tag.EFFECT | Tag.INPLACE


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


def group(trace: Trace, fusible=FUSIBLE) -> list:
    """The trace's bound symbols as a list of Region and single BoundSymbol, in a valid execution order.

    A view prim that would open a region of its own (a weight's transpose, a bias's broadcast: views of
    inputs, recorded before the ops that read them) waits for its first reader and joins that reader's
    region, instead of sitting alone in an early region that is too small to fuse. It never waits past a
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
        if not is_fusible and (not bsym.symbol.tags & Tag.PRIM or bsym.symbol.tags & Tag.INPLACE):
            # it may write its arguments: views of them (a reshape may be a copy) are taken before it
            hit = set(args)
            for n, b in list(pending.items()):
                if hit & {a.name for a in b.tensor_args()}:
                    hit.add(n)
            for b in take_pending([n for n in list(pending) if n in hit]):
                append_single(b)
        waiting = take_pending(args)
        deps = max((last_def.get(n, -1) for b in [*waiting, bsym] for n in (a.name for a in b.tensor_args())),
                   default=-1)
        if not is_fusible:
            for b in waiting:
                append_single(b)
            groups.append(bsym)
            idx = len(groups) - 1
            for n in outs:
                last_def[n] = idx
            if not bsym.symbol.tags & Tag.PRIM or bsym.symbol.tags & Tag.INPLACE:
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
            if bsym.symbol in _VIEW_PRIMS and not waiting:
                pending[outs[0]] = bsym  # (view prims have one output)
                continue
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


def fuse(trace: Trace, executor, *, min_computing: int = 2) -> Trace:
    """The trace with each worthwhile region replaced by one bound symbol that `executor` claims."""
    flat: list = []
    groups = group(trace, FUSIBLE | getattr(executor, "fusible_extra", frozenset()))
    if torch.is_grad_enabled() and any(isinstance(a, TensorProxy) and a.requires_grad for a in trace.args):
        groups = [part for g in groups for part in (_components(g) if isinstance(g, Region) else [g])]
    for g in groups:
        if isinstance(g, Region) and g.computing() < min_computing:
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
                if o.name in used_after[i] and o.name not in seen_out:
                    seen_out.add(o.name)
                    outputs.append(o)
        if not outputs:
            continue
        g.inputs, g.outputs = inputs, outputs
        g.written_later = {p.name for p in inputs if p.name in written}  # inputs written back after the region
        sym = Symbol(f"{executor.name}_fusion_{count}", None, Tag.NONE)
        sym.region = g
        sym.executor = executor
        count += 1
        out.append(BoundSymbol(sym, tuple(inputs), {}, tuple(outputs), list(g.bsyms), g.bsyms[0].location))
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
