"""thunder-lint's compiler: traces a PyTorch function into primitive ops, transforms the trace, runs it
with eager-identical results, and caches it behind guards. It emits events (compiler.events) to observers.

Public API: jit, last_traces, last_prologue_traces, cache_hits, cache_misses, last_events; the torch
symbol table (compiler.torchlang.TORCH_SYMBOLS); the front ends (compiler.frontend.interpreted_frontend, the default, and
compiler.frontend.native_frontend).
"""
from __future__ import annotations

import types

import torch

from .core import events  # noqa: F401
from .runtime.cache import CACHE_OPTIONS, JittedFunction, JittedModule
from .core.errors import CompilerError, DataDependentError, DeviceMismatchError, ExecutorError, UnsupportedInputError, UnsupportedOpError
from .torchlang.table import TORCH_SYMBOLS  # noqa: F401


def jit(fn_or_module, *, cache: str = "constant values", executors=None, observers=None, frontend=None,
        passes=None):
    """Compile a function or nn.Module.

    cache: "constant values" (guard every input's metadata and number values; re-trace on a mismatch)
      "symbolic values" (numbers and sizes of contiguous tensor arguments stay symbolic; every decision on them
      is a guard: compiler/symbolic/) or "no caching" (trace on every call).
    executors: priority list of executors or names ("nvfuser", "inductor", "torch", "python"). Default, per
      traced call: nvFuser, torch, python for calls with CUDA inputs where nvfuser_direct imports; torch,
      python otherwise (compiler.executors.default_executors).
    observers: callables receiving compiler.events.Event while a function is traced.
    frontend: replaces the default interpreting front end (compiler.frontend.interpreted_frontend) with any callable of
      compiler.frontend.native_frontend's signature, e.g. native_frontend itself.
    passes: trace passes run before executor assignment (default: DCE, CSE).
    """
    options = dict(cache=cache, executors=executors, observers=observers, frontend=frontend, passes=passes)
    if isinstance(fn_or_module, torch.nn.Module):
        return JittedModule(fn_or_module, **options)
    if isinstance(fn_or_module, types.MethodType) and isinstance(fn_or_module.__self__, torch.nn.Module):
        # jit(model.forward): the module's parameters, buffers and attributes are inputs/guards, as for jit(model)
        return JittedFunction(fn_or_module, module=fn_or_module.__self__, **options)
    if not callable(fn_or_module):
        raise TypeError(f"jit expects a function or nn.Module, got {type(fn_or_module).__qualname__}")
    return JittedFunction(fn_or_module, **options)


def _jitted(jfn) -> JittedFunction:
    if isinstance(jfn, JittedModule):
        return jfn._jitted
    if isinstance(jfn, JittedFunction):
        return jfn
    raise TypeError(f"expected the result of compiler.jit, got {type(jfn).__qualname__}")


def _last_entry(jfn):
    entry = _jitted(jfn).last_entry
    if entry is None:
        raise RuntimeError("the jitted function has not been called yet")
    return entry


def last_traces(jfn) -> list:
    """Computation traces of the last call's cache entry: front end, each pass, then the execution trace;
    for a trace split at reads of tensor values, the execution trace of each segment the call ran."""
    return list(_last_entry(jfn).traces)


def last_backward_traces(jfn) -> list:
    """For each fusion region of the last call's execution trace(s) whose inputs require grad: its backward
    trace built from per-prim VJPs, or a string saying why it has none (then torch.compile's AOTAutograd
    differentiates it)."""
    return [b for t in _last_entry(jfn).traces for b in getattr(t, "backward_traces", ())]


def last_prologue_traces(jfn) -> list:
    return list(_last_entry(jfn).prologue_traces)


def last_events(jfn) -> list:
    """Events emitted when the last call's cache entry was traced."""
    return list(_last_entry(jfn).events)


def last_segment_count(jfn) -> int:
    """Segments the last call ran: 1, plus one per read of a tensor value that split its trace."""
    return _last_entry(jfn).segment_count


def cache_hits(jfn) -> int:
    return _jitted(jfn).hits


def cache_misses(jfn) -> int:
    return _jitted(jfn).misses


__all__ = ["jit", "last_traces", "last_backward_traces", "last_segment_count", "last_prologue_traces", "last_events", "cache_hits", "cache_misses",
           "CACHE_OPTIONS", "CompilerError", "UnsupportedOpError", "UnsupportedInputError", "DataDependentError",
           "DeviceMismatchError", "ExecutorError", "TORCH_SYMBOLS"]
