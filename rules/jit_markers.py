"""What marks code as compiled or as eager, for the analyzer's project index (analyzer/project) as for the rules:
`torch.compiler.disable` and its aliases, decorators that run a function eagerly, and the branches that only run
eagerly (`if not torch.compiler.is_compiling():`). The rules' private helpers hold the logic; this is the one
public place other layers import it from."""

from __future__ import annotations

from ._jit_scopes import disabler_aliases, eager_decorator
from ._torch_api import after_compiling_returns, compiling_check_lines, eager_only_spans, mentions_compiling_checks

__all__ = ["after_compiling_returns", "compiling_check_lines", "disabler_aliases", "eager_decorator", "eager_only_spans",
           "mentions_compiling_checks"]
