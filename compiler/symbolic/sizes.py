"""Symbolic sizes (cache="symbolic values"): what Python reads of a proxy's sizes, and the size algebra shape
rules are written in (broadcasting, products, sizes that must be equal).

Design: meta tensors keep this call's concrete sizes (every meta computation is eager's); a proxy also
carries `sym_shape`, its sizes as expressions of the symbolic input sizes, for the ops whose shape rule
is known (compiler/symbolic/shapes.py, shape_rules.py). Sizes 0 and 1 are specialized (as torch's dynamic
shapes do); the others are SymInts the prologue reads from the tensors (`a_shape0 = v1.shape[0]`). A proxy
whose sizes no rule gives is UNKNOWN: Python reading its size specializes every symbolic input
(`fix_sizes`), after which concrete sizes are exact. So a size read is always either a symbolic expression
or guarded.
"""
from __future__ import annotations

from ..core import proxies
from ..core.context import current_state
from .values import SymFloat, SymInt, _bare, _lit, _val, constrain, specialize

UNKNOWN = "unknown"


def read_shape(proxy, reason: str):
    """The sizes Python sees for `proxy`: a tuple holding SymInts, or None (the meta sizes are exact)."""
    state = current_state()
    if state is None or not getattr(state, "symbolic", False) or state.sizes_fixed or state.depth > 0:
        return None  # (depth > 0: a decomposition into prims, which only the analysis reads)
    s = proxy.sym_shape
    if s is None:
        return None
    if s is UNKNOWN:
        fix_sizes(state, reason)
        return None
    return s


def fix_sizes(state, reason: str) -> None:
    """Specialize every symbolic input: from here on, every size the trace computes is a constant."""
    state.sizes_fixed = True
    for p in [*state.inputs, *state.read_sym_values]:
        if isinstance(p, (SymInt, SymFloat)):
            specialize(p, reason)
        sizes = getattr(p, "sym_shape", None)
        if isinstance(sizes, tuple):
            for d in sizes:
                specialize(d, reason)


class _Unknown(Exception):
    pass


def _sym(t):
    s = t.sym_shape
    if s is UNKNOWN:
        raise _Unknown
    return tuple(t.meta.shape) if s is None else s


def _eq_size(a, b):
    """One size from two that must be equal (broadcasting, matmul): a constraint when symbolic."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        if isinstance(a, SymInt) and isinstance(b, SymInt) and a.name == b.name:
            return a
        if _val(a) != _val(b):
            raise _Unknown
        # eager raises when they differ: a check (a constraint, but no decision of the computation: no TL301)
        holds = f"{_bare(_lit(a))} == {_bare(_lit(b))}"
        constrain(a, holds, holds, "check", "sizes that must match (eager raises otherwise)")
        return a if isinstance(a, SymInt) else b
    return a


def _not_one(d):
    """Broadcasting treats a size 1 apart: a symbolic size in a broadcast is decided to be 1 or not."""
    if not isinstance(d, SymInt) or getattr(d, "at_least_2", False):
        return d
    if d.value == 1:
        return specialize(d, "a size broadcast against another (1 broadcasts)")
    holds = f"{_bare(d.pexpr)} != 1"
    constrain(d, holds, holds, "check", "a size broadcast against another (1 broadcasts)")
    return d


def _broadcast(shapes):
    nd = max(len(s) for s in shapes)
    if len(shapes) > 1:
        shapes = [tuple(_not_one(d) for d in s) for s in shapes]
    out = []
    for i in range(nd):
        dims = [s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0]
        dims = [d for d in dims if not (type(d) is int and d == 1)] or [1]
        d = dims[0]
        for other in dims[1:]:
            d = _eq_size(d, other)
        out.append(d)
    return tuple(out)


def _prod(sizes):
    total = None
    for d in sizes:
        total = d if total is None else total * d
    return 1 if total is None else total


def _dim(d, nd):
    return d + nd if d < 0 else d


# TensorProxy (compiler.core) reads symbolic sizes through these.
proxies.SYMBOLIC_SIZES.read_shape = read_shape
proxies.SYMBOLIC_SIZES.fix_sizes = fix_sizes
proxies.SYMBOLIC_SIZES.product = _prod
proxies.SYMBOLIC_SIZES.specialize = specialize
