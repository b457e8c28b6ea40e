"""Structured events the compiler emits to observers (the analysis layer attaches here).

An observer is any callable taking one Event. Observers run synchronously while a function is traced
(first call and every recompile); an exception an observer raises propagates out of the jitted call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Event kinds (strings, so observers need not import this module to match them).
INPLACE_ON_MAY_VIEW = "inplace_on_may_view"  # in-place op on the result of reshape/flatten/contiguous/to...
INPLACE_ON_INPUT = "inplace_on_input"  # in-place op whose effect the caller sees (input or view of one)
# from the functionalization's walk of a finished trace (passes/functionalize.aliasing_events), emitted only
# when observers listen: a write that reaches an input (through views?), an input written and read again
WRITE_REACHES_INPUT = "write_reaches_input"
INPUT_READ_AFTER_WRITE = "input_read_after_write"
CAPTURED_TENSOR = "captured_tensor"  # a tensor not passed as an argument (global/closure) was used
DATA_DEPENDENT = "data_dependent"  # the program read a tensor value (TL302): the trace splits there (segments)
DATA_DEPENDENT_READ = "data_dependent_read"  # the same read, announced before the segment before it runs
DECOMPOSITION_FAILED = "decomposition_failed"  # a torch op could not be decomposed into prims (analysis only)
SYMBOLIC_CONSTRAINT = "symbolic_constraint"  # cache="symbolic values": Python decided on a symbolic value (TL301)


@dataclass
class Event:
    kind: str
    message: str
    location: Any = None  # compiler.core.source.SourceLocation of the user's line, or None
    op: str | None = None  # the symbol's printed name, e.g. "Tensor.add_"
    details: dict = field(default_factory=dict)

    def __str__(self):
        where = f"{self.location}: " if self.location else ""
        return f"{where}[{self.kind}] {self.message}"
