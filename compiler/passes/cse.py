"""Common subexpression elimination, restricted so that it can never change what the caller observes.

Merging two identical ops makes one tensor stand for two. That is only invisible if neither is mutated
and neither escapes: so a trace with any in-place op is left alone, creation and random ops are never
merged, and an op whose result (or a view of it) is returned is not merged with another whose result is -
the caller would get one tensor twice where eager returns two.
"""
from __future__ import annotations

from ..core import tree as pytree

from ..core.proxies import TensorProxy
from ..core.symbols import EFFECTFUL, Tag
from ..core.trace import Trace

_NEVER_MERGE = EFFECTFUL | Tag.CREATION


def escaping(output, bsyms) -> set[str]:
    """Names of the tensors `output` holds and of every tensor one of them may view (their memory escapes)."""
    escaping = {p.name for p in pytree.tree_leaves(output) if isinstance(p, TensorProxy)}
    for bsym in reversed(bsyms):
        if bsym.symbol.tags & (Tag.RETURNS_VIEW | Tag.MAY_RETURN_VIEW) and \
                any(o.name in escaping for o in bsym.tensor_outputs()):
            escaping.update(p.name for p in bsym.tensor_args())
    return escaping


def cse(trace: Trace) -> Trace:
    if any(b.symbol.tags & Tag.INPLACE for b in trace.bsyms):
        return trace.copy_with(trace.bsyms, "after common subexpression elimination (skipped: trace has in-place ops)")
    returned = escaping(trace.output, trace.bsyms)
    seen: dict = {}
    rename: dict[str, TensorProxy] = {}
    kept = []

    def sub(x):
        return rename.get(x.name, x) if isinstance(x, TensorProxy) else x

    for bsym in trace.bsyms:
        if rename:
            bsym = _renamed(bsym, sub)
        if bsym.symbol.tags & _NEVER_MERGE or not bsym.tensor_outputs():
            if bsym.symbol.tags & Tag.EFFECT and not bsym.tensor_outputs():
                # a switch of the state ops run in (grad mode, autocast, torch's flags): the same call after it
                # may give another dtype or requires_grad, so nothing before it is merged with what follows
                seen.clear()
            kept.append(bsym)
            continue
        key = bsym.key()
        prev = seen.get(key)
        outs = bsym.flat_outputs()
        if prev is not None and not (any(o.name in returned for o in bsym.tensor_outputs())
                                     and any(o.name in returned for o in prev.tensor_outputs())):
            for o, po in zip(outs, prev.flat_outputs()):
                if isinstance(o, TensorProxy):
                    rename[o.name] = po
            continue
        seen.setdefault(key, bsym)
        kept.append(bsym)
    new = trace.copy_with(kept, f"after common subexpression elimination (merged {len(trace.bsyms) - len(kept)})")
    new.output = pytree.tree_map(sub, trace.output)
    return new


def _renamed(bsym, sub):
    """The bound symbol reading merged names by their survivor, in its decomposition too (sub-symbols read
    the op's arguments: left alone they would name a proxy that no longer exists)."""
    from ..core.symbols import BoundSymbol

    args, kwargs = pytree.tree_map(sub, (bsym.args, bsym.kwargs))
    subsymbols = [_renamed(s, sub) for s in bsym.subsymbols]
    new = BoundSymbol(bsym.symbol, tuple(args), dict(kwargs), bsym.output, subsymbols, bsym.location)
    new.impl = bsym.impl
    return new
