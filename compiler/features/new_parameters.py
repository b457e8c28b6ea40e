"""nn.Parameter (and other tensor subclasses made by torch.Tensor._make_subclass) of a traced tensor: refused with
what to do instead.

A parameter made inside a jitted function becomes module state (a lazy module's initialize_parameters, built on its
first call), which a cached trace would not make again; and the native subclass constructor cannot take a traced
value (it raised "expected Tensor as argument 1, but got TensorProxy"). Lazy modules that exist before the call are
called eagerly until initialized (compiler/runtime/cache.py), so this is reached when one is made inside the call.
"""
from __future__ import annotations

import torch

from ..core.proxies import TensorProxy


def lookasides() -> dict:
    real_make_subclass = torch.Tensor._make_subclass

    def make_subclass(cls, data, *args, **kwargs):
        if isinstance(data, TensorProxy):
            from ..core.errors import UnsupportedOpError
            from ..core.source import user_location

            loc = user_location(2)
            raise UnsupportedOpError(
                f"{getattr(cls, '__qualname__', cls)} made from a traced tensor inside a jitted function is not "
                f"supported{f' at {loc.describe()}' if loc else ''}: make parameters outside it (a lazy module made "
                "inside the function initializes there: make it outside and call it once before the jitted calls)")
        return real_make_subclass(cls, data, *args, **kwargs)

    return {real_make_subclass: make_subclass}
