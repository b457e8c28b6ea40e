"""torch's global switches that change what ops compute: the default dtype, deterministic algorithms (and
their uninitialized-memory fill), float32 matmul precision, TF32, cuDNN determinism/benchmarking, and the
scaled_dot_product_attention backends (`torch.nn.attention.sdpa_kernel`).

- At the call: read when tracing starts and guarded by the prologue, so a trace serves only calls made
  under the same switches.
- Inside the function (`torch.set_default_dtype(...)`, `with sdpa_kernel(...)`, `use_deterministic_algorithms`):
  the user's code changes them natively while tracing, so the ops traced after see them (metadata as eager);
  the recorder notices the change at the next op, as for grad mode and autocast, and records a SET_TORCH_FLAGS
  symbol, so every call runs each op under eager's switches, and leaves them as eager leaves them.
"""
from __future__ import annotations

import torch

from ..core.symbols import BoundSymbol, Symbol, Tag

_C = torch._C
# (name shown in traces, getter, setter)
_FLAGS = (
    ("default dtype", torch.get_default_dtype, torch.set_default_dtype),
    ("deterministic algorithms", lambda: (_C._get_deterministic_algorithms(), _C._get_deterministic_algorithms_warn_only()),
     lambda v: _C._set_deterministic_algorithms(v[0], warn_only=v[1])),
    ("fill uninitialized memory", _C._get_deterministic_fill_uninitialized_memory,
     _C._set_deterministic_fill_uninitialized_memory),
    ("float32 matmul precision", _C._get_float32_matmul_precision, _C._set_float32_matmul_precision),
    ("cudnn allow tf32", _C._get_cudnn_allow_tf32, _C._set_cudnn_allow_tf32),
    ("cublas allow tf32", _C._get_cublas_allow_tf32, _C._set_cublas_allow_tf32),
    ("cudnn deterministic", _C._get_cudnn_deterministic, _C._set_cudnn_deterministic),
    ("cudnn benchmark", _C._get_cudnn_benchmark, _C._set_cudnn_benchmark),
    ("sdpa flash", _C._get_flash_sdp_enabled, _C._set_sdp_use_flash),
    ("sdpa memory-efficient", _C._get_mem_efficient_sdp_enabled, _C._set_sdp_use_mem_efficient),
    ("sdpa math", _C._get_math_sdp_enabled, _C._set_sdp_use_math),
    ("sdpa cudnn", _C._get_cudnn_sdp_enabled, _C._set_sdp_use_cudnn),
    ("sdpa overrideable", _C._get_overrideable_sdp_enabled, _C._set_sdp_use_overrideable),
)


def current() -> tuple:
    return tuple(get() for _, get, _ in _FLAGS)


def set_state(state: tuple) -> None:
    for (_, get, put), value in zip(_FLAGS, state):
        if get() != value:
            put(value)


def describe_change(before: tuple, after: tuple) -> str:
    return ", ".join(f"{name} {a!r}" for (name, _, _), b, a in zip(_FLAGS, before, after) if a != b)


def _print_set(bsym, trace):
    state, shown = bsym.args
    return [f"{trace.const_expr(set_state)}({trace.expr(state)})  # torch switches: {shown}"]


SET_TORCH_FLAGS = Symbol("compiler.torch_flags.set_state", lambda state, shown: set_state(state), Tag.EFFECT,
                         meta=lambda sym, args, kwargs: None, printer=_print_set)


def sync(state, loc) -> None:
    """Called before each top-level op while tracing (and once at the end): record a change of the switches
    made by the user's code."""
    now = current()
    if now != state.torch_flags:
        shown = describe_change(state.torch_flags, now)
        state.scopes[-1].append(BoundSymbol(SET_TORCH_FLAGS, (now, shown), {}, None, location=loc))
        state.torch_flags = now


def guard_expr(trace, state: tuple) -> str:
    """Prologue condition (True = mismatch) for the switches the trace was made under."""
    return f"{trace.const_expr(current)}() != {trace.expr(state)}"
