"""Guards on module hook dictionaries (compiler/features/module_hooks.py says why): the keys of every hook
dictionary of the traced module tree, of the other modules the traced code called, and of torch's global
module hooks."""
from __future__ import annotations

import torch

from ..core.errors import UnsupportedOpError
from ..features.module_hooks import PER_MODULE, hook_dicts
from .epilogue import CHECK_KEYS


def guard_hooks(builder, module: torch.nn.Module | None, interpreted: bool = True) -> None:
    from torch.nn.modules import module as module_impl

    backward = [module_impl._global_backward_hooks, module_impl._global_backward_pre_hooks]
    if module is not None:
        backward += [d for sub in module.modules() for d in (sub._backward_hooks, sub._backward_pre_hooks)]
    if not interpreted and any(backward):
        # natively, torch's BackwardHook would wrap proxies; the interpreter records it as ops
        # (compiler/features/backward_hooks.py)
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
            for d in (getattr(sub, name, None) for name in PER_MODULE):
                if isinstance(d, dict):
                    builder._emit(CHECK_KEYS, d, tuple(d))
