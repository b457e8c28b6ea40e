"""Module hooks are part of what a traced call does: nn.Module.__call__ runs them while tracing, so the
trace contains their ops (backward hooks: compiler/backward_hooks.py). A hook added or removed later must
re-trace, so the prologue guards the keys of every hook dictionary of the traced module tree, of every
other module the traced code calls (one held by a global, a closure or an argument's attribute: its calls
are noted through a lookaside on Module._call_impl), and of torch's global module hooks."""
from __future__ import annotations

import types

import torch

from .epilogue import CHECK_KEYS
from .errors import UnsupportedOpError

_PER_MODULE = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")
_GLOBAL = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
           "_global_backward_pre_hooks", "_global_forward_hooks_always_called")


def hook_dicts(module: torch.nn.Module | None) -> list:
    from torch.nn.modules import module as module_impl

    found = [getattr(module_impl, name) for name in _GLOBAL if isinstance(getattr(module_impl, name, None), dict)]
    if module is not None:
        for sub in module.modules():
            found += [d for d in (getattr(sub, name, None) for name in _PER_MODULE) if isinstance(d, dict)]
    return found


def guard_hooks(builder, module: torch.nn.Module | None, interpreted: bool = True) -> None:
    from torch.nn.modules import module as module_impl

    backward = [module_impl._global_backward_hooks, module_impl._global_backward_pre_hooks]
    if module is not None:
        backward += [d for sub in module.modules() for d in (sub._backward_hooks, sub._backward_pre_hooks)]
    if not interpreted and any(backward):
        # natively, torch's BackwardHook would wrap proxies; the interpreter records it as ops
        # (compiler/backward_hooks.py)
        raise UnsupportedOpError("module backward hooks (register_full_backward_hook / _pre_hook, or the global "
                                 "ones) are not supported by the native front end; use the default (interpreting) "
                                 "front end")
    for d in hook_dicts(module):
        builder._emit(CHECK_KEYS, d, tuple(d))


def guard_called_modules(builder, called: dict, module: torch.nn.Module | None) -> None:
    """Guards for the modules the traced code called outside the jitted module's own tree."""
    own = {id(m) for m in module.modules()} if module is not None else set()
    for key, sub in called.items():
        if key not in own:
            for d in (getattr(sub, name, None) for name in _PER_MODULE):
                if isinstance(d, dict):
                    builder._emit(CHECK_KEYS, d, tuple(d))


def lookasides() -> dict:
    """Module._call_impl -> note the module (its hooks are guarded), then interpret torch's own body."""
    from .interpreter.interpreter import Tracked, with_provenance

    real = torch.nn.Module._call_impl
    # a copy of the function: the interpreter looks lookasides up by identity, so the copy runs interpreted
    body = types.FunctionType(real.__code__, real.__globals__, real.__name__, real.__defaults__, real.__closure__)

    @with_provenance
    def call_impl(module, *args, **kwargs):
        from .source import _INTERPRETERS
        from .trace import current_state

        state = current_state()
        if state is not None:
            state.called_modules.setdefault(id(module.value), module.value)
        everything = (module, *args)
        value, prov = _INTERPRETERS[-1].call(None, body, tuple(a.value for a in everything),
                                             {k: v.value for k, v in kwargs.items()},
                                             [a.provenance for a in everything],
                                             {k: v.provenance for k, v in kwargs.items()})
        return Tracked(value, prov)

    return {real: call_impl}
