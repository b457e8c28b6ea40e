# Report: https://github.com/Lightning-AI/lightning-thunder/issues/1464
# What went wrong: a module-level ContextVar read inside the jitted function was baked into the trace
# without a prologue check; after `.set(...)` the jitted function still added the old value.
# Reporter's shape: `_compile_data = ContextVar(...)` at module level, `.get()` inside fn; thunder.jit(fn).
from contextvars import ContextVar

import thunder
import torch

_offset_var = ContextVar("offset", default=1)


def add_offset(x):
    v = _offset_var.get()  # expect: TL201
    return x + v


if __name__ == "__main__":
    jadd = thunder.jit(add_offset)
    print(jadd(torch.ones(3)))
    _offset_var.set(2)
    print(jadd(torch.ones(3)))  # still adds 1
