"""The dynamic analysis: the compiler with the user's function interpreted and the trace checks attached.

    jit(fn, *, sharp_edges="allow" | "warn" | "error", rules=None, **compiler_options)
    check(fn, *args, **kwargs) -> list[Diagnostic]
    SharpEdgeError (``.diagnostics``), SharpEdgeWarning
"""
from __future__ import annotations

try:
    import torch  # noqa: F401  the compiler the checks run on is built on torch
except ModuleNotFoundError as e:
    if e.name != "torch":
        raise
    # torch is the `torch` extra: static lint, --fix and the service install and run without it.
    raise ModuleNotFoundError(
        "analyzer.jit and analyzer.check need PyTorch, which is not installed here: "
        "pip install 'thunder-lint[torch]' (or torch itself)",
        name="torch",
    ) from None

from .api import check, jit
from .errors import SharpEdgeError, SharpEdgeWarning

__all__ = ["jit", "check", "SharpEdgeError", "SharpEdgeWarning"]
