"""The execution plan: from the last pass's trace to the callable a cache entry runs.

Without a fusing executor (the default) the execution trace is the trace in eager order, each op claimed by
the first executor that can run it. With one (inductor; nvFuser on CUDA), the trace is functionalized,
cleaned by DCE, grouped into fusion regions that the fusing executor claims, and the rest is claimed as
usual. A trace functionalization cannot express, and calls whose written inputs share memory with other
inputs (the trace cannot know; eager's order of writes and reads through the shared memory decides the
result), run the eager-order trace instead, so the result is always eager's.
"""
from __future__ import annotations

from ..passes.dce import dce
from ..passes.functionalize import NotFunctional, functionalize
from ..passes.fusion import fuse
from ..core.proxies import TensorProxy
from . import assign_executors, python_executor, torch_executor


def plan_execution(trace, executors) -> tuple[list, object]:
    """([traces added after `trace`: ..., execution trace], the callable that runs it)."""
    fuser = next((e for e in executors if getattr(e, "fuses", False)), None)
    if fuser is None:
        execution = assign_executors(trace, executors)
        return [execution], execution.python_callable()
    try:
        functional = functionalize(trace)
    except NotFunctional as e:
        execution = assign_executors(trace, [e for e in executors if e is not fuser])
        execution.header += f" (not functionalized: {e}; runs in eager order)"
        return [execution], execution.python_callable()
    cleaned = dce(functional)
    cleaned.writebacks = functional.writebacks
    fused = fuse(cleaned, fuser)
    execution = assign_executors(fused, executors)
    execution.backward_traces = [b.symbol.backward for b in execution.bsyms if getattr(b.symbol, "backward", None)]
    computation = execution.python_callable()
    written = [i for i, a in enumerate(trace.args) if any(a is w for w in functional.writebacks)]
    if written:
        computation = _unless_inputs_share_memory(computation, written, trace)
        execution.header += f" ({SHARED_INPUTS})"
    return [functional, cleaned, fused, execution], computation


SHARED_INPUTS = "a call whose written inputs share memory with other inputs runs the eager-order trace"


def _unless_inputs_share_memory(computation, written: list[int], trace):
    tensor_positions = [i for i, a in enumerate(trace.args) if isinstance(a, TensorProxy)]
    eager_order = []

    def run(*inputs):
        written_storages = set()
        for i in written:
            t = inputs[i]
            if t.numel():
                written_storages.add(t.untyped_storage().data_ptr())
        for i in tensor_positions:
            t = inputs[i]
            if i not in written and t.numel() and t.untyped_storage().data_ptr() in written_storages:
                break
        else:
            if len(written_storages) == sum(1 for i in written if inputs[i].numel()):
                run.last_eager_order_reason = None
                return computation(*inputs)
        if not eager_order:  # built on first need: written inputs alias other inputs in this call
            eager_order.append(assign_executors(trace, (torch_executor, python_executor)).python_callable())
        run.last_eager_order_reason = "written inputs share memory with other inputs in this call"
        return eager_order[0](*inputs)

    run.last_eager_order_reason = None
    return run
