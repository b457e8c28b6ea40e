"""Symbolic values and sizes (`jit(fn, cache="symbolic values")`): numbers and tensor sizes that stay symbolic in
a trace, every decision on them a guard. values.py: SymInt/SymFloat/SymBool and constraints; sizes.py: the
sizes Python reads and the size algebra; shapes.py and shape_rules.py: each op's output sizes;
builtin_answers.py: isinstance/type answered as eager would for traced values."""
from __future__ import annotations

from .sizes import UNKNOWN, fix_sizes, read_shape  # (importing sizes plugs it into TensorProxy)
from .values import (SYM_TYPES, Constraint, Fallback, SymBool, SymFloat, SymInt, check_only, concrete, constrain,
                     has_symbolic, input_name, is_requested, negate, requested, specialize, specialize_all)

__all__ = ["UNKNOWN", "fix_sizes", "read_shape", "SYM_TYPES", "Constraint", "Fallback", "SymBool", "SymFloat", "SymInt",
           "check_only", "concrete", "constrain", "has_symbolic", "input_name", "is_requested", "negate", "requested",
           "specialize", "specialize_all"]
