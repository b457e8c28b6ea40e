"""Module hooks are part of what a traced call does: nn.Module.__call__ runs them while tracing, so the
trace contains their ops. A hook added or removed later must re-trace, so the prologue guards the keys of
every hook dictionary of the traced module tree and torch's global module hooks."""
from __future__ import annotations

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


def guard_hooks(builder, module: torch.nn.Module | None) -> None:
    from torch.nn.modules import module as module_impl

    backward = [module_impl._global_backward_hooks, module_impl._global_backward_pre_hooks]
    if module is not None:
        backward += [d for sub in module.modules() for d in (sub._backward_hooks, sub._backward_pre_hooks)]
    if any(backward):
        # they wrap the forward's tensors in autograd.Function objects that need real tensors
        raise UnsupportedOpError("module backward hooks (register_full_backward_hook / _pre_hook, or the global "
                                 "ones) are not supported by the compiler; use Tensor.register_hook on the outputs")
    for d in hook_dicts(module):
        builder._emit(CHECK_KEYS, d, tuple(d))
