"""Executors, in priority order: each bound symbol runs on the first executor that claims it; a symbol
no executor claims is replaced by its decomposition (sub-symbols), recursively. A fusing executor
(nvFuser, inductor) goes first in the list and claims the fusion regions it can run.

Without `executors=`, the choice is per traced call (`default_executors`): calls with CUDA inputs put
nvFuser first where nvfuser_direct imports; every other call uses torch, so a CPU call never imports
nvFuser and its first call stays in milliseconds. Inductor is only chosen explicitly."""
from __future__ import annotations

from ..core.errors import ExecutorError
from ..core.symbols import BoundSymbol
from ..core.trace import Trace
from .python_executor import PythonExecutor, python_executor
from .torch_executor import TorchExecutor, torch_executor


class Executor:
    """Interface: `name`, `can_execute(bsym) -> bool`, `callee(bsym, trace) -> str` (a Python expression
    resolvable in the trace's namespace; register the callable with `trace.const_expr` if it has no name)."""

    name = "executor"

    def can_execute(self, bsym: BoundSymbol) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def callee(self, bsym: BoundSymbol, trace: Trace) -> str:  # pragma: no cover - interface
        raise NotImplementedError


DEFAULT_EXECUTORS = (torch_executor, python_executor)


def nvfuser_unavailable() -> str | None:
    """None where the default may use nvFuser (CUDA and an importable nvfuser_direct), else why not.
    Imported once, on the first call with CUDA inputs; any import failure (missing wheel, a torch it was not
    built for) keeps the default on torch instead of failing the call."""
    if not _NVFUSER_CHECK:
        import torch

        if not torch.cuda.is_available():
            return "no CUDA device"  # not cached: a process may gain CUDA later (CUDA_VISIBLE_DEVICES set late)
        try:
            import nvfuser_direct  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any import failure means: not available
            _NVFUSER_CHECK.append(f"nvfuser_direct does not import ({type(e).__name__}: {e})")
        else:
            _NVFUSER_CHECK.append(None)
    return _NVFUSER_CHECK[0]


_NVFUSER_CHECK: list = []


def default_executors(device_types, unavailable=nvfuser_unavailable) -> tuple:
    """The executors for a call when `executors=` is not given, from its inputs' device types: CUDA inputs
    -> (nvfuser, torch, python) where `unavailable()` gives no reason; anything else -> DEFAULT_EXECUTORS."""
    if "cuda" not in device_types or unavailable() is not None:
        return DEFAULT_EXECUTORS
    from .nvfuser import nvfuser_default

    return (nvfuser_default, torch_executor, python_executor)


def _by_name(name: str):
    if name == "torch":
        return torch_executor
    if name == "python":
        return python_executor
    if name == "inductor":
        from .inductor import inductor_executor

        return inductor_executor
    if name == "nvfuser":
        from .nvfuser import nvfuser_executor

        return nvfuser_executor()
    raise ValueError(f'unknown executor {name!r}; names: "nvfuser", "inductor", "torch", "python"')


def resolve_executors(executors) -> tuple:
    """Executor objects or names ("nvfuser", "inductor", "torch", "python"), in priority order; the python
    executor is added last when only names are given (grad-mode switches and inline Python need it)."""
    if executors is None:
        return DEFAULT_EXECUTORS
    if isinstance(executors, str):
        executors = (executors,)
    names = [e for e in executors if isinstance(e, str)]
    executors = tuple(_by_name(e) if isinstance(e, str) else e for e in executors)
    if names and python_executor not in executors:
        executors += (python_executor,)
    for e in executors:
        if not (hasattr(e, "can_execute") and hasattr(e, "callee")):
            raise TypeError(f"not an executor: {e!r} (needs can_execute(bsym) and callee(bsym, trace))")
    return executors


def assign_executors(trace: Trace, executors) -> Trace:
    """The execution trace: every bound symbol claimed by an executor (or flattened into its sub-symbols)."""
    out = trace.copy_with([], "execution trace: " + ", ".join(getattr(e, "name", type(e).__name__) for e in executors))
    for bsym in trace.bsyms:
        out.bsyms.extend(_claim(bsym, executors, out))
    out.header += "; ran: " + ran_where(out)
    return out


def ran_where(trace: Trace) -> str:
    """What ran where, e.g. "inductor 3 regions (41 ops), torch 20 ops, python 2 ops" (an executor listed but
    given nothing is not named: the list of executors alone would say inductor where nothing was fused)."""
    counts: dict = {}
    for b in trace.bsyms:
        name = getattr(b.impl[0], "name", type(b.impl[0]).__name__) if b.impl else "python"
        regions, ops = counts.get(name, (0, 0))
        fused = "_fusion_" in b.symbol.name
        counts[name] = (regions + fused, ops + (len(b.subsymbols) if fused else 1))
    return ", ".join(f"{name} {regions} region{'s' * (regions != 1)} ({ops} ops)" if regions else f"{name} {ops} ops"
                     for name, (regions, ops) in counts.items()) or "nothing"


def _claim(bsym: BoundSymbol, executors, trace: Trace) -> list[BoundSymbol]:
    if bsym.symbol.printer is not None:
        return [bsym]
    for ex in executors:
        if ex.can_execute(bsym):
            claimed = BoundSymbol(bsym.symbol, bsym.args, bsym.kwargs, bsym.output, bsym.subsymbols, bsym.location)
            claimed.impl = (ex, ex.callee(bsym, trace))
            return [claimed]
    if bsym.subsymbols:
        result = []
        for sub in bsym.subsymbols:
            if sub.location is None:
                sub.location = bsym.location
            result.extend(_claim(sub, executors, trace))
        return result
    where = f" (called at {bsym.location.describe()})" if bsym.location else ""
    raise ExecutorError(f"no executor in {[getattr(e, 'name', e) for e in executors]} can run {bsym.symbol.name}{where}, "
                        "and it has no decomposition into prims")


__all__ = ["Executor", "TorchExecutor", "PythonExecutor", "torch_executor", "python_executor",
           "DEFAULT_EXECUTORS", "assign_executors", "resolve_executors", "default_executors", "nvfuser_unavailable"]
