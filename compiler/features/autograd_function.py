"""Custom torch.autograd.Function: traced as one op whose execution is `Fn.apply` itself.

Inlining its forward would lose the user's backward (and run the forward's ops without autograd). So a call
`Fn.apply(...)` with traced tensors becomes one symbol: its metadata comes from running `Fn.apply` on fake
tensors of the proxies' devices (torch runs the user's forward there, ctx and all), and the execution trace
calls the real `Fn.apply`, so autograd records the user's Function: its backward, ctx.save_for_backward,
ctx.needs_input_grad, mark_non_differentiable, mark_dirty and once_differentiable behave as in eager. The
forward's Python runs once more while tracing (on fake tensors).
"""
from __future__ import annotations

import weakref

import torch

from ..core import tree as pytree
from ..core.proxies import TensorProxy
from ..core.symbols import Symbol, Tag

_SYMBOLS: "weakref.WeakKeyDictionary[type, Symbol]" = weakref.WeakKeyDictionary()


def _symbol(cls) -> Symbol:
    sym = _SYMBOLS.get(cls)
    if sym is None:
        def meta(symbol, args, kwargs):
            from ..meta.fake import run_on_fake
            from ..meta.functions import new_proxy

            device = next(p.device for p in pytree.tree_leaves((args, kwargs)) if isinstance(p, TensorProxy))
            return run_on_fake(cls.apply, args, kwargs, device, new_proxy)

        # EFFECT: kept in order and never merged (its forward may write in place: ctx.mark_dirty)
        sym = Symbol(f"{cls.__qualname__}.apply", cls.apply, Tag.EFFECT, meta=meta)
        _SYMBOLS[cls] = sym
    return sym


def apply(cls, *args, **kwargs):
    """Lookaside for torch.autograd.Function.apply under the interpreter."""
    if not any(isinstance(x, (torch.Tensor, TensorProxy)) for x in pytree.tree_leaves((args, kwargs))):
        with torch._C.DisableTorchFunction():
            return cls.apply(*args, **kwargs)
    return _symbol(cls)(*args, **kwargs)


APPLY = torch.autograd.Function.apply.__func__
