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
from ..core.source import INTERPRETERS
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
    interp = INTERPRETERS[-1] if INTERPRETERS else None
    if interp is not None and interp.run_outside is not None:
        effect = _forward_effect(cls, args, kwargs)
        if effect is not None:
            # the fake run for metadata would repeat the effect: the real Fn.apply runs once, natively, on the real
            # values (an effect of the call: its trace serves that call only)
            return interp.run_for_real(interp.active[-1] if interp.active else None, cls.apply, args, kwargs,
                                       f"runs {cls.__qualname__}.forward, which has a Python effect ({effect})")[0]
        from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
        try:
            return _symbol(cls)(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException):
            # the forward reads tensor values (float(x.sum()), x[mask]): no fake run gives its metadata, so it runs
            # for real, once per call, like the forwards with effects
            return interp.run_for_real(interp.active[-1] if interp.active else None, cls.apply, args, kwargs,
                                       f"runs {cls.__qualname__}.forward, which reads tensor values")[0]
    return _symbol(cls)(*args, **kwargs)


class _Effect(Exception):
    pass


def _forward_effect(cls, args, kwargs) -> str | None:
    """Where the forward (and setup_context) would change state outliving it (a list appended to, a global, an
    attribute, print), from a dry run under the interpreter on fake tensors stopped before the first change; None
    if it has none (or the dry run fails: the fake run for metadata then raises as it would)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from ..interpreter import Interpreter, InterpreterError

    found = []

    def stop(frame, target):
        found.append(str(frame.location()) if frame is not None else "?")
        raise _Effect

    interp = Interpreter()
    interp.fresh = {}
    interp.before_effect = stop
    interp.uncatchable = (InterpreterError, _Effect)
    ctx = interp.note_fresh(torch.autograd.function.FunctionCtx())
    custom_setup = cls.setup_context is not torch.autograd.function._SingleLevelFunction.setup_context
    try:
        with torch._C.DisableTorchFunction(), FakeTensorMode() as mode, torch.no_grad():
            def fake(x):
                if isinstance(x, (TensorProxy, torch.Tensor)):  # (a traced value, or a captured tensor)
                    m = x.meta if isinstance(x, TensorProxy) else x
                    return interp.note_fresh(torch.empty_strided(tuple(m.shape), tuple(m.stride()), dtype=m.dtype,
                                                                 device=x.device))
                return x

            fargs, fkwargs = pytree.tree_map(fake, (args, kwargs))
            forward = cls.forward
            if custom_setup:
                out, _ = interp.call(None, forward, tuple(fargs), dict(fkwargs), [None] * len(fargs), {})
                interp.call(None, cls.setup_context, (ctx, tuple(fargs), out), {}, [None] * 3, {})
            else:
                interp.call(None, forward, (ctx, *fargs), dict(fkwargs), [None] * (len(fargs) + 1), {})
            del mode
    except _Effect:
        return found[0] if found else "?"
    except Exception:  # noqa: BLE001 - a dry run that fails tells nothing: the metadata run raises where it must
        return None
    return None


APPLY = torch.autograd.Function.apply.__func__
