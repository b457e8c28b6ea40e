"""Training-step code inside a jitted function that a cached trace cannot repeat: refused before it acts.

The execution trace runs the forward under eager autograd, so `loss.backward()` belongs after the jitted
call, and so do `optimizer.step()` / `zero_grad()` and LR-scheduler steps: they change Python state of
objects the trace does not own (the optimizer's `state` dict, `param_groups`, `p.grad` slots), which
tracing would do once and cached calls never again (measured before this refusal: parameters differed from
eager from the second step on). Likewise an attribute written on a tensor that is not a traced value (a
parameter of a global model: `p.grad = None`) is refused. Each refusal says what to do instead; nothing has
changed when it is raised (the step is refused on entry, before the optimizer touches its state).
The same `setattr` / `register_buffer` lookasides mark where a module slot is written (compiler/frontend/epilogue.py).
"""
from __future__ import annotations

import torch

from ..core.context import mark_module_attribute, mark_write
from ..core.proxies import TensorProxy

_ADVICE = ("jit the forward and loss, and call loss.backward(), optimizer.step() and optimizer.zero_grad() "
           "outside the jitted function")


def _refusal(what: str, advice: str = _ADVICE):
    from ..core.errors import UnsupportedOpError
    from ..core.source import user_location

    loc = user_location(3)
    return UnsupportedOpError(f"{what} inside a jitted function is not supported"
                              f"{f' at {loc.describe()}' if loc else ''}: {advice}")


def lookasides() -> dict:
    from torch.autograd import profiler

    real_record_function = profiler.record_function

    def backward(*args, **kwargs):
        raise _refusal("backward (torch.autograd.backward / Tensor.backward)")

    def grad(*args, **kwargs):
        raise _refusal("torch.autograd.grad")

    def record_function(name, *args, **kwargs):
        # every optimizer's step (Optimizer.profile_hook_step) enters this first, before touching state
        if isinstance(name, str) and name.startswith("Optimizer.step#"):
            raise _refusal(f"{name.split('#', 1)[1]} (an optimizer step)")
        return real_record_function(name, *args, **kwargs)

    def zero_grad(self, *args, **kwargs):
        raise _refusal(f"{type(self).__name__}.zero_grad")

    def scheduler_step(self, *args, **kwargs):
        raise _refusal(f"{type(self).__name__}.step (a learning-rate scheduler step)")

    def traced_setattr(obj, name, value):
        if isinstance(obj, torch.Tensor) and type(obj) is not TensorProxy:
            raise _refusal(f"setting {name!r} of a tensor that is not an argument (a parameter or tensor held "
                           f"by a global or closure)", "a cached trace would not repeat the write; do it outside the "
                           "jitted function")
        if isinstance(obj, torch.nn.Module):
            mark_module_attribute(obj, name, value)  # (where the epilogue's store goes)
        return setattr(obj, name, value)

    def traced_delattr(obj, name):
        if isinstance(obj, torch.nn.Module):
            mark_module_attribute(obj, name)  # (a deletion: where the epilogue's store goes)
        return delattr(obj, name)

    def register_buffer(self, name, tensor, *args, **kwargs):
        mark_write(self._buffers, name, tensor)
        return real_register_buffer(self, name, tensor, *args, **kwargs)  # (natively: its checks and hooks)

    real_register_buffer = torch.nn.Module.register_buffer
    table = {torch.autograd.backward: backward, torch.autograd.grad: grad, profiler.record_function: record_function,
             torch.optim.Optimizer.zero_grad: zero_grad, setattr: traced_setattr, delattr: traced_delattr,
             torch.nn.Module.register_buffer: register_buffer}
    if hasattr(torch.optim.lr_scheduler, "LRScheduler"):
        table[torch.optim.lr_scheduler.LRScheduler.step] = scheduler_step
    return table
