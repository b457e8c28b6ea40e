"""Front ends: (fn, args, kwargs) -> computation trace + prologue (guards). native.py traces by calling the
function natively; interpreted.py (jit's default) runs it under the bytecode interpreter (compiler.interpreter),
which sees Python effects. Around them: hidden inputs, the prologue and epilogue builders, segments at
data-dependent reads, and the interpreter's lookasides for torch."""
from __future__ import annotations

from .interpreted import interpreted_frontend
from .native import FrontendResult, native_frontend

__all__ = ["FrontendResult", "interpreted_frontend", "native_frontend"]
