"""torch.vmap (and torch.func.vmap) inside a jitted function: the vmapped call is one op of the trace.

Interpreting torch's vmap machinery over proxies cannot work (it wraps real tensors in batched tensors in
C++), so `torch.vmap(f, ...)(*args)` with traced tensors becomes one symbol: its metadata comes from running
the vmapped function on fake tensors of the proxies' devices, and the execution trace calls
`torch.vmap(f, ...)(*args)` on the real tensors, so in-place ops of `f` on its (batched) inputs, its
randomness option and autograd behave as in eager. EFFECT: kept in order, never dropped or merged.
"""
from __future__ import annotations

import functools

import torch

from ..core import tree as pytree
from ..core.proxies import TensorProxy
from ..core.symbols import Symbol, Tag


def _meta(symbol, args, kwargs):
    from ..meta.fake import run_on_fake
    from ..meta.functions import new_proxy

    device = next(p.device for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy))
    return run_on_fake(symbol.fn, args, kwargs, device, new_proxy)


class _Vmapped:
    """What `torch.vmap(f, ...)` returns under the interpreter: called with traced tensors, one symbol. Traced
    tensors `f` closes over (`lambda r: r * w` with `w` traced) are arguments of the symbol too: its run puts
    their values (fake while tracing, real when executed) in the closure's cells for the call."""

    def __init__(self, real_vmap, func, options):
        self.func, self.options = func, options
        self.native = real_vmap(func, **options)
        self.cells = [c for c in getattr(func, "__closure__", None) or () if _holds_proxy(c)]
        name = getattr(func, "__qualname__", type(func).__name__)
        self.symbol = Symbol(f"vmap[{name}]", self._run, Tag.EFFECT, meta=_meta)  # (run by the python executor)
        functools.update_wrapper(self, func, updated=())

    def _run(self, captured, *args, **kwargs):
        if any(isinstance(x, TensorProxy) for x in pytree.tree_leaves((captured, args, kwargs))):
            # a trace of the trace (a fusing executor under cache="symbolic values" traces the execution trace per
            # call's sizes): this call is the symbol again, not torch's vmap over proxies
            return self.symbol(captured, *args, **kwargs)
        saved = [c.cell_contents for c in self.cells]
        for cell, value in zip(self.cells, captured):
            cell.cell_contents = value
        try:
            return self.native(*args, **kwargs)
        finally:
            for cell, value in zip(self.cells, saved):
                cell.cell_contents = value

    def __call__(self, *args, **kwargs):
        captured = tuple(c.cell_contents for c in self.cells)
        if not any(isinstance(x, TensorProxy) for x in pytree.tree_leaves((captured, args, kwargs))):
            with torch._C.DisableTorchFunction():
                return self.native(*args, **kwargs)
        return self.symbol(captured, *args, **kwargs)


def _holds_proxy(cell) -> bool:
    try:
        return isinstance(cell.cell_contents, TensorProxy)
    except ValueError:
        return False


def _lookaside(real_vmap):
    def vmap(func=None, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
        options = dict(in_dims=in_dims, out_dims=out_dims, randomness=randomness, chunk_size=chunk_size)
        if func is None:  # used as a decorator factory: torch.vmap(in_dims=1)(f)
            return lambda f: _Vmapped(real_vmap, f, options)
        return _Vmapped(real_vmap, func, options)

    return vmap


def lookasides() -> dict:
    import torch.func

    return {torch.vmap: _lookaside(torch.vmap), torch.func.vmap: _lookaside(torch.func.vmap)}
