"""The torch language: the symbol table (table.py: torch callable -> Symbol, `dispatch`, `TracingMode`), the
primitive ops (prims.py), decompositions of torch ops into prims, symbols derived from torch's operator schemas,
and the recorder that turns calls into a trace (recording.py)."""
from __future__ import annotations

from . import ops  # (fills the table)
from .table import (DERIVED_SYMBOLS, METADATA_FUNCTIONS, TORCH_SYMBOLS, TracingMode, derived_symbol, dispatch,
                    interpret_python, printed_name, register, register_property, symbol_for)

__all__ = ["ops", "DERIVED_SYMBOLS", "METADATA_FUNCTIONS", "TORCH_SYMBOLS", "TracingMode", "derived_symbol", "dispatch",
           "interpret_python", "printed_name", "register", "register_property", "symbol_for"]
