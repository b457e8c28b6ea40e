"""Module hooks are part of what a traced call does: nn.Module.__call__ runs them while tracing, so the
trace contains their ops (backward hooks: backward_hooks.py). A hook added or removed later must re-trace, so
the prologue guards the keys of every hook dictionary of the traced module tree, of every other module the
traced code calls (one held by a global, a closure or an argument's attribute: its calls are noted through a
lookaside on Module._call_impl), and of torch's global module hooks (the guards:
compiler/frontend/hook_guards.py)."""
from __future__ import annotations

import types

import torch

from ..core.context import current_state
from ..core.source import INTERPRETERS
from ..interpreter.interpreter import Tracked, with_provenance

PER_MODULE = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")
_GLOBAL = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
           "_global_backward_pre_hooks", "_global_forward_hooks_always_called")


def hook_dicts(module: torch.nn.Module | None) -> list:
    from torch.nn.modules import module as module_impl

    found = [getattr(module_impl, name) for name in _GLOBAL if isinstance(getattr(module_impl, name, None), dict)]
    if module is not None:
        for sub in module.modules():
            found += [d for d in (getattr(sub, name, None) for name in PER_MODULE) if isinstance(d, dict)]
    return found


def lookasides() -> dict:
    """Module._call_impl -> note the module (its hooks are guarded), then interpret torch's own body."""
    real = torch.nn.Module._call_impl
    # a copy of the function: the interpreter looks lookasides up by identity, so the copy runs interpreted
    body = types.FunctionType(real.__code__, real.__globals__, real.__name__, real.__defaults__, real.__closure__)

    @with_provenance
    def call_impl(module, *args, **kwargs):
        state = current_state()
        if state is not None:
            state.called_modules.setdefault(id(module.value), module.value)
        everything = (module, *args)
        value, prov = INTERPRETERS[-1].call(None, body, tuple(a.value for a in everything),
                                             {k: v.value for k, v in kwargs.items()},
                                             [a.provenance for a in everything],
                                             {k: v.provenance for k, v in kwargs.items()})
        return Tracked(value, prov)

    return {real: call_impl}
