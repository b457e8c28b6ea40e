"""torch.autocast: its state is part of what a trace assumes, and ops traced under it get its dtypes.

- State: (enabled, dtype) per device type, read when tracing starts; the prologue guards it, so a trace
  made under autocast is used only under the same autocast (and one made without it only without it).
- Inside the function, `with torch.autocast(...)` changes the state natively while tracing; the recorder
  notices the change at the next op (as for grad mode) and records a SET_AUTOCAST symbol, so the
  computation runs each op in eager's autocast state; the caller's state is put back at the end.
- Metadata: meta tensors ignore autocast (there is no autocast for the meta device), so an op traced
  while autocast is on runs on fake tensors of the proxies' real device type (FakeTensorMode), where
  torch's own autocast rules choose the dtypes, exactly as in eager.
"""
from __future__ import annotations

import torch

from .symbols import BoundSymbol, Symbol, Tag

DEVICE_TYPES = tuple(d for d in ("cpu", "cuda") if torch._C._is_autocast_available(d))


def current() -> tuple:
    return tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in DEVICE_TYPES)


def set_state(state: tuple) -> None:
    for d, (enabled, dtype) in zip(DEVICE_TYPES, state):
        torch.set_autocast_enabled(d, enabled)
        torch.set_autocast_dtype(d, dtype)


def _print_set(bsym, trace):
    (state,) = bsym.args
    shown = ", ".join(f"{d} {str(dt).replace('torch.', '')}" if on else f"{d} off" for d, (on, dt) in zip(DEVICE_TYPES, state))
    return [f"{trace.const_expr(set_state)}({trace.expr(state)})  # autocast: {shown}"]


SET_AUTOCAST = Symbol("compiler.autocast.set_state", set_state, Tag.EFFECT, meta=lambda sym, args, kwargs: None,
                      printer=_print_set)


def sync(state, loc) -> None:
    """Called before each top-level op while tracing: record an autocast change made by the user's code."""
    now = current()
    if now != state.autocast:
        state.scopes[-1].append(BoundSymbol(SET_AUTOCAST, (now,), {}, None, location=loc))
        state.autocast = now


def guard_expr(trace, state: tuple) -> str:
    """Prologue condition (True = mismatch) for the autocast state the trace was made under."""
    if not any(enabled for enabled, _ in state):
        return "torch._C._is_any_autocast_enabled()"
    return f"{trace.const_expr(current)}() != {trace.expr(state)}"


def run_on_fake(fn, args, kwargs, device, new_proxy):
    """`fn` on fake tensors of the proxies' devices under the active autocast; results as meta proxies."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from . import tree as pytree
    from .proxies import OpaqueProxy, TensorProxy

    by_id = {}
    with torch._C.DisableTorchFunction(), FakeTensorMode() as mode:
        def to_fake(x):
            if isinstance(x, TensorProxy):
                m = x.meta
                f = torch.empty_strided(tuple(m.shape), tuple(m.stride()), dtype=m.dtype, device=x.device)
                if m.requires_grad:
                    f.requires_grad_(True)
                    if not m.is_leaf:
                        f = f.clone()
                by_id[id(f)] = x
                return f
            if isinstance(x, (torch.Generator, OpaqueProxy)):
                return None
            return x

        fargs, fkwargs = pytree.tree_map(to_fake, (args, kwargs))
        fkwargs.pop("generator", None)
        out = fn(*fargs, **fkwargs)
        del mode

    def wrap(o):
        if isinstance(o, torch.Tensor):
            p = by_id.get(id(o))
            if p is not None:
                return p
            with torch._C.DisableTorchFunction():
                m = torch.empty_strided(tuple(o.shape), tuple(o.stride()), dtype=o.dtype, device="meta")
                if o.requires_grad:
                    m.requires_grad_(True)
                    m = m.clone()  # an op's result: not a leaf
            return new_proxy(m, device)
        return o

    return pytree.tree_map(wrap, out)
