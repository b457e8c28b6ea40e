"""What the dynamic analysis raises and warns with."""
from __future__ import annotations

from compiler.interpreter import InterpreterError


class SharpEdgeError(RuntimeError):
    """A jitted call hit a hazard whose level is "error"; raised before any result is returned.

    ``diagnostics``: the error-level findings (trace Diagnostics with the user's file:line)."""

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        lines = [f"{d.path}:{d.line}:{d.column}: {d.code} [{d.name}] {d.message}" for d in self.diagnostics]
        super().__init__("sharp edges in the jitted function:\n  " + "\n  ".join(lines))


class SharpEdgeWarning(UserWarning):
    """A hazard whose level is "warning" (sharp_edges="warn" or rules={code: "warning"})."""


class StopTracing(InterpreterError):
    """Raised by the analysis inside the interpreter at the first error-level hazard, to stop the user's code
    before it does more. The interpreter lets no interpreted `try` catch an InterpreterError; the front end
    turns it into a SharpEdgeError once the compiler's tracing context is unwound."""
