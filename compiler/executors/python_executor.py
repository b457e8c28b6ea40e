"""The Python executor: symbols that are plain Python - prologue guards (each prints its own checks) and
global-state switches like grad mode. Number arithmetic needs none under "constant values" caching (values
are guarded and folded); the symbolic-values issue adds number symbols here."""
from __future__ import annotations

from ..core.symbols import BoundSymbol, Tag


class PythonExecutor:
    name = "python"

    def can_execute(self, bsym: BoundSymbol) -> bool:
        return bsym.symbol.printer is not None or bool(bsym.symbol.tags & Tag.EFFECT)

    def callee(self, bsym: BoundSymbol, trace) -> str:
        if bsym.symbol.fn is None:
            raise TypeError(f"{bsym.symbol.name} prints inline code and has no callee")
        return trace.const_expr(bsym.symbol.fn) if not bsym.symbol.name.startswith("torch.") else bsym.symbol.name


python_executor = PythonExecutor()
