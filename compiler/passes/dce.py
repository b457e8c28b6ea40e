"""Dead code elimination: drop bound symbols whose outputs nothing needs. In-place ops, random ops (RNG
state is a side effect: dropping one shifts every later random number) and grad-mode switches stay."""
from __future__ import annotations

from ..core import tree as pytree

from ..core.proxies import TensorProxy
from ..core.symbols import EFFECTFUL
from ..core.trace import Trace


def dce(trace: Trace) -> Trace:
    needed = {p.name for p in pytree.tree_leaves(trace.output) if isinstance(p, TensorProxy)}
    kept = []
    for bsym in reversed(trace.bsyms):
        outs = {o.name for o in bsym.tensor_outputs()}
        if bsym.symbol.tags & EFFECTFUL or outs & needed:
            kept.append(bsym)
            needed.update(p.name for p in bsym.tensor_args())
    removed = len(trace.bsyms) - len(kept)
    return trace.copy_with(list(reversed(kept)), f"after dead code elimination (removed {removed})")
