"""The dynamic analysis: the compiler with the user's function interpreted and the trace checks attached.

    jit(fn, *, sharp_edges="allow" | "warn" | "error", rules=None, **compiler_options)
    check(fn, *args, **kwargs) -> list[Diagnostic]
    SharpEdgeError (``.diagnostics``), SharpEdgeWarning
"""
from __future__ import annotations

from .api import check, jit
from .errors import SharpEdgeError, SharpEdgeWarning

__all__ = ["jit", "check", "SharpEdgeError", "SharpEdgeWarning"]
