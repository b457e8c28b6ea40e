"""torch.autocast: its state is part of what a trace assumes, and ops traced under it get its dtypes.

- State: (enabled, dtype) per device type, read when tracing starts; the prologue guards it, so a trace
  made under autocast is used only under the same autocast (and one made without it only without it).
- Inside the function, `with torch.autocast(...)` changes the state natively while tracing; the recorder
  notices the change at the next op (as for grad mode) and records a SET_AUTOCAST symbol, so the
  computation runs each op in eager's autocast state; the caller's state is put back at the end.
- Metadata: meta tensors ignore autocast (there is no autocast for the meta device), so an op traced
  while autocast is on runs on fake tensors of the proxies' real device type (FakeTensorMode), where
  torch's own autocast rules choose the dtypes, exactly as in eager (compiler/meta/fake.py).
"""
from __future__ import annotations

import torch

from ..core.symbols import BoundSymbol, Symbol, Tag

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
