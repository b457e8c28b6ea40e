"""The front end: (fn, args, kwargs) -> computation trace + prologue trace.

The tracing core: arguments become proxies and guards, and a TorchFunctionMode routes every torch call
through the symbol table while the user's function runs. By itself it calls the function natively;
compiler.frontend.interpreted_frontend (jit's default) runs it under the bytecode interpreter through `call=`.
`jit(..., frontend=...)` takes any callable with the signature of `native_frontend`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import torch
from ..core import tree as pytree

from ..core.errors import CompilerError, DataDependentError
from ..core.events import DATA_DEPENDENT, Event
from .prologue import PrologueBuilder
from ..symbolic.builtin_answers import answering_isinstance, refuse_type_is_tensor, user_code_objects
from .hidden_inputs import StateSnapshot, user_codes
from ..features import autocast, torch_flags
from . import escapes, segments
from ..symbolic import values as symbolic
from .epilogue import StateWrites, append_stores, emit_guards, holds_proxy, insert_stores, replayable
from .hook_guards import guard_called_modules, guard_hooks
from ..core.proxies import OpaqueProxy, TensorProxy
from ..torchlang.table import TracingMode
from ..torchlang.recording import SET_GRAD_ENABLED, TracingState
from ..core.symbols import BoundSymbol
from ..core.trace import SameObject, Trace
from ..core.context import tracing


@dataclass
class FrontendResult:
    computation: Trace
    prologue: Trace
    events: list = field(default_factory=list)
    rerun: list = field(default_factory=list)  # why the trace is good for this call only (Python effects)
    segments: object = None  # compiler.frontend.segments.Path when value reads split the trace
    escapes: object = None  # compiler.frontend.escapes.Escapes: the trace returns (result, escaped values)


def native_frontend(fn, args, kwargs, *, module: torch.nn.Module | None = None, observers=(),
                    decompose: bool = True, call=None, hidden_reads=None, written_objects=None) -> FrontendResult:
    """Trace `fn(*args, **kwargs)`; with `module`, its parameters and buffers are inputs too.

    call: what runs the function over the proxies (default: `fn` itself, natively; the interpreted front
    end passes the interpreter). hidden_reads: called after tracing, returns expanded HiddenValues seen
    read at run time (beyond those found statically in `fn`'s code) for the prologue to guard too.
    written_objects: called after tracing, returns the objects outliving the call that it changed in place
    (compiler/frontend/escapes.py: traced values stored there are replaced by real ones after the run)."""
    state = TracingState(observers, decompose)
    if segments.current_options() is not None:  # under compiler.jit: value reads split the trace
        state.segmenter = segments.Segmenter(state, segments.current_options())
    builder = PrologueBuilder(state)
    state.builder = builder
    state.name_input = input_namer(fn, module)
    # Symbolic numbers need the interpreter (it keeps them from native code that would read them silently)
    state.symbolic = call is not None and symbolic.is_requested()
    if state.symbolic:
        builder.labels = _parameter_labels(fn, len(args), kwargs)
    try:
        pargs, pkwargs = builder.arguments(args, kwargs)
        if getattr(call, "argument_objects", None) is not None:  # (their attribute writes are stores, not effects)
            call.argument_objects.update(builder.arg_objects)
        swaps = builder.module_tensors(module, "module") if module is not None else []
        builder.hidden(fn, module)
        guard_hooks(builder, module, interpreted=call is not None)
        snapshot = StateSnapshot(fn, module)
        state_writes = StateWrites(module, snapshot)
        state.tracked_containers = {id(held) for _, held, _ in state_writes.contents}
        if state.segmenter is not None:
            state.segmenter.watch(state_writes)
        if call is None:  # natively, type(proxy) is TensorProxy; the interpreter answers type() as eager does
            refuse_type_is_tensor(user_code_objects(user_codes(fn, module)))
    except BaseException:
        builder.state_objects.put_back(None, lambda v: True)  # (argument objects hold proxies until tracing ends)
        raise
    grad_enabled = torch.is_grad_enabled()
    globals_before = _global_state(state)
    keep_effects = False  # the user's exception: eager kept what happened before it
    rebuilder = escapes.Rebuilder(call.made_by_call, call.pre_existing, builder.state_objects.proxies()) \
        if getattr(call, "pre_existing", None) is not None else None
    try:
        with tracing(state), answering_isinstance(), TracingMode():
            out = (fn if call is None else call)(*pargs, **pkwargs)
            if rebuilder is not None:  # objects it did not make: returned as they are; made: made again
                out = rebuilder(out)  # (a DynamicCache)
            out = state.normalize(out)  # numbers -> values, returned real tensors -> captured inputs
            # a returned comparison of symbolic values (`k = t.max().item() > s`): eager returns a bool, so the
            # trace returns this call's answer and guards it, as `if k:` would
            out = pytree.tree_map(lambda v: bool(v) if isinstance(v, symbolic.SymBool) else v, out)
            rng_after_run = getattr(state.segmenter, "rng_after_run", None)
            if rng_after_run is not None:  # segments ran for real: their draws and seeds are eager's, not a leak
                globals_before = globals_before[:2] + (rng_after_run, state.segmenter.gens_after_run)
            changed = [name for name, before, now in zip(_GLOBAL_STATE_NAMES, globals_before, _global_state(state))
                       if not _same(before, now) and name != "the default dtype"]  # (recorded: torch_flags)
    except DataDependentError as e:
        state.emit(Event(DATA_DEPENDENT, str(e), e.location))  # observers see it even though we raise
        raise
    except Exception as e:
        if getattr(e, "thunder_segment_raised", False):
            e.thunder_effects_kept = keep_effects = True  # a segment run for real raised: what ran before stays
        elif state.segmenter is not None and _users_exception(e):
            # eager did everything before the raise: do it for real, keep the Python effects, re-raise
            state.segmenter.run_before_error(state_writes.take(holds_proxy)[0])
            e.thunder_effects_kept = keep_effects = True
        raise
    finally:
        writes, key_guards = state_writes.take(holds_proxy)  # replayed by the epilogue (stores), put back now
        made = [slot.label for slot, _ in state_writes.take(lambda v: _holds_created_generator(v, state))[0]]
        # None, numbers, deletions...: put back too (unless kept), and stored by the epilogue
        settled, settled_guards, single_use = state_writes.settled(
            not keep_effects, state.write_marks, writes, _stored(rebuilder, call) if rebuilder is not None else None)
        # argument objects holding tensors: their attributes put back; those the call reassigned are stored
        object_stores, object_single_use = builder.state_objects.put_back(
            _stored(rebuilder, call) if rebuilder is not None else None, replayable, keep_effects)
        single_use = list(single_use) + object_single_use
        if state.segmenter is not None and state.segmenter.records:  # (read before the buffers are put back)
            settled += state.segmenter.restated(writes + settled)
        for d, name, real in swaps:
            if isinstance(d.get(name), TensorProxy):  # (not where the call stored or deleted something else)
                d[name] = real
        torch._C._set_grad_enabled(grad_enabled)
        leaks = snapshot.restore_leaks(holds_proxy)
        made += snapshot.restore_leaks(lambda v: _holds_created_generator(v, state))
        roots = written_objects() if written_objects is not None else []
        escaped = escapes.Escapes(roots, escapes.find(roots)) if roots else None
        if escaped is not None and escaped.proxies and sys.exc_info()[1] is not None:
            # the program raised (eager stored what it computed) or tracing was refused (what was stored stays,
            # not journaled): the real values computed so far, arguments' and captured tensors' own
            escaped.known = {**{p.name: real for real, p in state.captured}, **state.real_inputs}
            escaped.patch_from(state.segmenter.env if state.segmenter is not None else {})
    if changed:
        raise CompilerError(f"the function changes global torch state natively ({', '.join(changed)}); tracing runs it "
                            "once, so cached calls would not repeat it: set it outside the jitted function")
    if made:
        raise CompilerError(f"the function stores a torch.Generator it creates outside its result ({', '.join(made)}); "
                            "it was put back. A cached trace cannot repeat that: create the generator outside the "
                            "jitted function and pass it as an argument")
    if leaks:
        raise CompilerError(f"the function stores traced tensors outside its result ({', '.join(leaks)}); they were "
                            "put back. A cached trace cannot repeat such writes: return the values instead")
    mutated = builder.mutated_arguments()
    if mutated:
        raise CompilerError(f"the function changes its argument {', '.join(mutated)} (a Python list/dict); a cached "
                            "trace cannot repeat Python side effects on arguments: return the values instead")
    if state.grad_enabled != grad_enabled:  # a `no_grad` block left open cannot happen; restore anyway
        state.trace.bsyms.append(BoundSymbol(SET_GRAD_ENABLED, (grad_enabled,), {}, None))
    if state.autocast != state.initial_autocast:  # a `with torch.autocast` exits before return; restore anyway
        state.trace.bsyms.append(BoundSymbol(autocast.SET_AUTOCAST, (state.initial_autocast,), {}, None))
    torch_flags.sync(state, None)  # switches the function changed after its last op stay changed, as in eager
    writes += settled
    floor = state.segmenter.cut if state.segmenter is not None and state.segmenter.records else 0
    insert_stores(state.trace, writes, state.write_marks, floor)
    append_stores(state.trace, object_stores)  # (at the end: each value is computed by then)
    reads = getattr(call, "attribute_reads", None)
    unread, alternatives = state_writes.unread(writes, reads.read_before_write) if reads is not None else ([], {})
    if unread and not single_use:  # a slot the call writes before reading it: no guard on what it held before
        builder.unguard(unread, alternatives)
    emit_guards(builder, key_guards + settled_guards, alternatives)
    guard_called_modules(builder, state.called_modules, module)
    _check_outputs(out, single_use=bool(state.single_use))
    trace = state.trace
    trace.args = list(state.inputs) + [p for _, p in state.captured]
    trace.output = out
    single_use = list(single_use) + state.single_use
    if escaped is not None and escaped.proxies:  # returned beside the result, put in their places after the run
        trace.output = (out, escaped.traced_outputs())
        escaped.known = {**{p.name: real for real, p in state.captured}, **state.real_inputs}
        single_use.append("stores traced values into objects that outlive the call")
    else:
        escaped = None
    trace.header = "computation trace from the " + ("native" if call is None else "interpreting") + " front end"
    if hidden_reads is not None:
        builder.guard_hidden(hidden_reads())
    prologue = builder.finish(state.captured, grad_enabled)
    path = state.segmenter.finish(trace) if state.segmenter is not None and state.segmenter.records else None
    if state.observers:  # an analysis listens: tell it which inputs are written, through views, and read again
        from ..passes.functionalize import aliasing_events

        for event in aliasing_events(trace, lambda p: state.name_input(p.origin) if p.origin else p.name):
            state.emit(event)
    state.real_inputs.clear()  # (the state lives on in cycles: it must not keep the call's tensors)
    return FrontendResult(trace, prologue, state.events, rerun=single_use, segments=path, escapes=escaped)



def _stored(rebuilder, call):
    """An object the call made and stored on its module, as a value every call makes again. None where it holds
    an object other than a module that the trace would keep by identity: one reached from the arguments differs
    from call to call, and one the call made natively (`object()`) looks like state it found (the module holds
    it while this runs)."""
    def rebuild(value):
        from ..core.trace import SameObject

        new = rebuilder(value)
        if any(type(v) is SameObject and not isinstance(v.obj, torch.nn.Module) for v in pytree.tree_leaves(new)):
            return None
        return new

    return rebuild


def _parameter_labels(fn, n_args: int, kwargs) -> dict:
    """"args[1]" -> "n": the parameter names of `fn` (for naming symbolic inputs readably)."""
    import inspect

    labels = {f"kwargs[{k!r}]": k for k in kwargs}
    try:
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return labels
    for i in range(n_args):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            labels[f"args[{i}]"] = params[i].name
    return labels


def input_namer(fn, module=None):
    """origin ("args[0]", "kwargs['k']", "module.weight"...) -> the name the user wrote ("x", "k", "self.weight")."""
    import inspect
    import re

    try:
        params = list(inspect.signature(module.forward if module is not None else fn).parameters.values())
    except (TypeError, ValueError):
        params = []

    def name(origin: str) -> str:
        m = re.match(r"args\[(\d+)\]", origin)
        if m and int(m.group(1)) < len(params) and params[int(m.group(1))].kind in (
                inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            return params[int(m.group(1))].name + origin[m.end():]
        m = re.match(r"kwargs\[['\"](\w+)['\"]\]", origin)
        if m:
            return m.group(1) + origin[m.end():]
        if origin.startswith("module."):
            return "self." + origin[len("module."):]
        return origin

    return name


_GLOBAL_STATE_NAMES = ("the grad mode (set_grad_enabled without restoring it)", "the default dtype",
                       "the random number generator state (manual_seed, set_rng_state or a random draw outside the "
                       "traced ops)", "a generator argument's state")


def _global_state(state) -> tuple:
    # Tracing itself runs only meta ops: none of this changes unless the user's Python code changes it.
    with torch._C.DisableTorchFunction():
        gens = tuple(p.value.get_state() for p in state.inputs
                     if isinstance(p, OpaqueProxy) and isinstance(p.value, torch.Generator))
        return torch.is_grad_enabled(), torch.get_default_dtype(), torch.random.get_rng_state(), gens


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _users_exception(e: Exception) -> bool:
    """Raised by the user's program (eager raises it too), not a refusal of the compiler or interpreter."""
    from ..interpreter import InterpreterError

    return not isinstance(e, (CompilerError, InterpreterError)) and not getattr(e, "thunder_from_observer", False)


def _holds_created_generator(value, state) -> bool:
    return bool(state.created_generators) and any(
        isinstance(v, torch.Generator) and any(v is g for g in state.created_generators)
        for v in pytree.tree_leaves(value))



def _check_outputs(out, single_use: bool = False) -> None:
    """Every result a cached trace can give again: traced values, constants, objects returned by identity; an
    array made by the call only where the trace serves that call alone (it read a tensor's .numpy())."""
    from ..core.errors import UnsupportedInputError

    for leaf in pytree.tree_leaves(out):
        if isinstance(leaf, (TensorProxy, SameObject)) or leaf is None or isinstance(
                leaf, (bool, int, float, complex, str, torch.dtype, torch.device, torch.Size, slice)):
            continue
        if isinstance(leaf, OpaqueProxy) and not isinstance(leaf.value, torch.Generator):
            continue  # a numpy array argument: this call's array
        if type(leaf).__module__ == "numpy" and (type(leaf).__name__ != "ndarray" or single_use):
            continue  # a numpy scalar (immutable)
        kind = "torch.Generator" if isinstance(leaf, OpaqueProxy) else type(leaf).__qualname__
        raise UnsupportedInputError(f"the jitted function returns a {kind}, which the compiler "
                                    "cannot reproduce on later calls; return tensors, numbers or containers of them")
