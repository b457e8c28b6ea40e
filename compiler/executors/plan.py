"""The execution plan: from the last pass's trace to the callable a cache entry runs.

Without a fusing executor (the default) the execution trace is the trace in eager order, each op claimed by
the first executor that can run it. With one (inductor; nvFuser on CUDA), the trace is functionalized,
cleaned by DCE, grouped into fusion regions that the fusing executor claims, and the rest is claimed as
usual. A trace functionalization cannot express, and calls whose written inputs share memory with other
inputs (the trace cannot know; eager's order of writes and reads through the shared memory decides the
result), run the eager-order trace instead, so the result is always eager's.
"""
from __future__ import annotations

import torch

from ..core.symbols import Tag
from ..passes.dce import dce, mark_unused_that_may_raise
from ..passes.functionalize import NotFunctional, functionalize, write_into_dead_values
from ..passes.fusion import fuse
from ..core.proxies import TensorProxy
from . import assign_executors, python_executor, torch_executor


def plan_execution(trace, executors, *, continues: bool = False) -> tuple[list, object]:
    """([traces added after `trace`: ..., execution trace], the callable that runs it). `continues`: the trace is a
    segment the call goes on after (passes.fusion.fuse)."""
    fuser = next((e for e in executors if getattr(e, "fuses", False)), None)
    if fuser is None:
        execution = assign_executors(trace, executors)
        return [execution], execution.python_callable()
    mark_unused_that_may_raise(trace)  # (eager raises there: so must the fused path)
    try:
        functional = functionalize(trace)
    except NotFunctional as e:
        execution = assign_executors(trace, [e for e in executors if e is not fuser])
        execution.header += f" (not functionalized: {e}; runs in eager order)"
        return [execution], execution.python_callable()
    cleaned = write_into_dead_values(dce(functional))
    cleaned.writebacks = functional.writebacks
    fused = fuse(cleaned, fuser, continues=continues)
    execution = assign_executors(fused, executors)
    execution.backward_traces = [b.symbol.backward for b in execution.bsyms if getattr(b.symbol, "backward", None)]
    computation = execution.python_callable()
    written = [i for i, a in enumerate(trace.args) if any(a is w for w in functional.writebacks)]
    replayable = _replayable(trace)
    if written:
        execution.header += f" ({SHARED_INPUTS})"
    if replayable:
        execution.header += f" ({RAISED})"
    if written or replayable:
        computation = _with_eager_order(computation, written, trace, replayable)
    return [functional, cleaned, fused, execution], computation


SHARED_INPUTS = "a call whose written inputs share memory with other inputs runs the eager-order trace"
RAISED = "a call whose fused computation raises runs the eager-order trace"

# Effects a second run repeats harmlessly: each sets a state (a slot, grad mode, autocast, torch's switches)
_REPLAYABLE_EFFECTS = frozenset(("epilogue.store", "torch._C._set_grad_enabled", "compiler.autocast.set_state",
                                 "compiler.torch_flags.set_state"))


def _replayable(trace) -> bool:
    """Whether a call whose fused computation raised may run again in eager order: its write-backs come last,
    so the inputs are as the call found them, and its other effects only set states."""
    return all(not (b.symbol.tags & Tag.EFFECT) or b.symbol.name in _REPLAYABLE_EFFECTS for b in trace.bsyms)


def _with_eager_order(computation, written: list[int], trace, replayable: bool):
    """The fused computation, or the eager-order trace where it could differ: written inputs that share memory
    with other inputs in this call, and (if replayable) a call where the fused computation raised: eager raises
    at the same op, but after the in-place writes before it, which the fused one makes only at its end."""
    tensor_positions = [i for i, a in enumerate(trace.args) if isinstance(a, TensorProxy)]
    random = any(b.symbol.tags & Tag.RANDOM for b in trace.bsyms)
    eager_order = []

    def in_eager_order(inputs, reason):
        if not eager_order:  # built on first need
            eager_order.append(assign_executors(trace, (torch_executor, python_executor)).python_callable())
        run.last_eager_order_reason = reason
        return eager_order[0](*inputs)

    def shares_memory(inputs) -> bool:
        written_storages = set()
        for i in written:
            t = inputs[i]
            if t.numel():
                written_storages.add(t.untyped_storage().data_ptr())
        for i in tensor_positions:
            t = inputs[i]
            if i not in written and t.numel() and t.untyped_storage().data_ptr() in written_storages:
                return True
        return len(written_storages) != sum(1 for i in written if inputs[i].numel())

    def run(*inputs):
        if written and shares_memory(inputs):
            return in_eager_order(inputs, "written inputs share memory with other inputs in this call")
        run.last_eager_order_reason = None
        if not replayable:
            return computation(*inputs)
        rng = _rng_states() if random else None
        try:
            return computation(*inputs)
        except Exception:  # noqa: BLE001 - eager's own exception comes from the eager-order run
            if rng is not None:
                _set_rng_states(rng)
            return in_eager_order(inputs, "the fused computation raised")

    run.last_eager_order_reason = None
    return run


def _rng_states():
    return torch.random.get_rng_state(), (torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None)


def _set_rng_states(states):
    torch.random.set_rng_state(states[0])
    if states[1] is not None:
        torch.cuda.set_rng_state_all(states[1])
