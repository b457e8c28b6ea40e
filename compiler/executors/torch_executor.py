"""The torch executor: runs torch-language symbols and prims as the real torch calls (CPU, CUDA, any
device torch supports). The execution trace calls them directly, e.g. `t2 = torch.add(t0, t1)`."""
from __future__ import annotations

from ..core.symbols import BoundSymbol, Tag


class TorchExecutor:
    name = "torch"

    def __init__(self, only_prims: bool = False):
        # only_prims: claim nothing but prims, so ops run through their decompositions (tests the fallback).
        self.only_prims = only_prims
        if only_prims:
            self.name = "torch-prims"

    def can_execute(self, bsym: BoundSymbol) -> bool:
        sym = bsym.symbol
        if sym.fn is None or sym.printer is not None or sym.tags & Tag.EFFECT and not sym.name.startswith("torch."):
            return False
        return not self.only_prims or bool(sym.tags & Tag.PRIM)

    def callee(self, bsym: BoundSymbol, trace) -> str:
        # Printed names of torch symbols ("torch.add", "F.linear", "Tensor.add_", "prims.exp") resolve in
        # every trace's namespace; prims resolve to the torch callables beside them.
        return bsym.symbol.name


torch_executor = TorchExecutor()
