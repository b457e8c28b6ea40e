"""Cache entries and the jitted callable.

A call tries each entry's prologue (generated guard code) in turn; the first that returns inputs runs
that entry's computation (generated code calling torch directly). No match: trace, transform, build,
append an entry. Autograd: the computation runs the real torch ops, so when inputs require grad, eager's
autograd records them as it would in eager mode (no separate backward trace).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import torch

from ..features import autocast, backward_hooks, torch_flags
from ..frontend import epilogue, segments
from ..symbolic import values as symbolic
from ..executors import DEFAULT_EXECUTORS, default_executors, resolve_executors
from ..executors.inductor import shape_generic
from ..executors.plan import plan_execution
from ..core.errors import CompilerError
from ..frontend.native import FrontendResult, native_frontend
from ..frontend.interpreted import interpreted_frontend
from ..passes import run_passes
from ..core.trace import Trace
from ..core.context import current_state

CACHE_OPTIONS = ("constant values", "symbolic values", "no caching")

# One trace at a time in the process: the interpreter runs the user's Python (a `global n; n += 1` is many
# steps there, so threads tracing at once lost updates eager keeps), and tracing swaps process-wide state
# (builtins.isinstance, the interpreters' stack). Cache hits run without it.
_TRACING_LOCK = threading.RLock()


@dataclass
class CacheEntry:
    prologue: object  # callable(args, kwargs) -> tuple of computation inputs, or None
    computation: object  # callable(*inputs) -> outputs
    traces: list[Trace]
    prologue_traces: list[Trace]
    events: list = field(default_factory=list)
    compile_seconds: float = 0.0
    rerun: list = field(default_factory=list)  # non-empty: Python effects; used for the call that traced it only
    segment_count: int = 1  # traces split at reads of tensor values (compiler.segments): segments run
    symbolic: bool = False  # traced with symbolic values (else constant values, also after a Fallback)
    self_invalidated: bool = False  # its tracing call changed state its prologue checks; not used since


MAX_UNUSED_SELF_INVALIDATED = 4


class NativeFrontendWarning(UserWarning):
    pass


def _caller_level() -> int:
    """warnings' stacklevel of the first frame outside this package (the user's jit call)."""
    here, level, frame = os.path.dirname(os.path.dirname(__file__)), 2, sys._getframe(2)  # compiler/
    while frame is not None and os.path.dirname(frame.f_code.co_filename) in (here, os.path.join(here, "runtime")):
        frame, level = frame.f_back, level + 1
    return level


class JittedFunction:
    def __init__(self, fn, *, cache: str = "constant values", executors=None, observers=None, frontend=None,
                 module: torch.nn.Module | None = None, passes=None):
        if cache not in CACHE_OPTIONS:
            raise ValueError(f"unknown cache option {cache!r}; expected one of {CACHE_OPTIONS}")
        self.fn = fn
        self.cache_option = cache
        self.executors = resolve_executors(executors)
        self.default_executors = executors is None  # then chosen per traced call from its inputs' devices
        self.observers = list(observers or ())
        self.frontend = frontend or interpreted_frontend
        if frontend is native_frontend:  # it cannot see Python effects: say so rather than differ silently
            warnings.warn("compiler.jit(frontend=native_frontend): Python effects of the traced code on objects that "
                          "outlive the call (a hook object's list, a global object's attribute) run only while "
                          "tracing, not on cache hits; the default interpreting front end repeats or re-traces them",
                          NativeFrontendWarning, stacklevel=_caller_level())
        self.module = module
        self.passes = passes
        self.entries: list[CacheEntry] = []
        self.generic_regions = False  # fusion regions compiled for any size (set by _FusedPerCall's nested jit)
        self.last_entry: CacheEntry | None = None
        self.hits = 0
        self.misses = 0
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        for entry in self.entries:
            inputs = entry.prologue(args, kwargs)
            if inputs is not None:
                self.hits += 1
                entry.self_invalidated = False
                if isinstance(entry.computation, segments.SegmentedComputation):
                    return segments.run_cached(self, entry, inputs, args, kwargs)
                self.last_entry = entry
                return entry.computation(*inputs)
        return self._miss(args, kwargs)

    def _miss(self, args, kwargs):
        if current_state() is not None:
            # Called from inside a function being traced: inline it into that trace.
            return self.fn(*args, **kwargs)
        self.misses += 1
        if _uninitialized_lazy_module(self.fn, self.module):
            # nn.LazyLinear & co. before their first call: eager's first call materializes their parameters
            # (shapes from the inputs, initial values drawn). That call runs eagerly; later calls are traced.
            return self.fn(*args, **kwargs)
        entry = self.compile(args, kwargs)
        if isinstance(entry.computation, segments.SegmentedComputation):
            inputs = ()  # (its first run continues from the segments tracing ran: they may have changed the inputs)
        else:
            inputs = entry.prologue(args, kwargs)
            if inputs is None:
                inputs = self._inputs_after_own_writes(entry, args, kwargs)
        kept = self.cache_option != "no caching" and not entry.rerun
        if kept:
            self.entries.append(entry)
        self.last_entry = entry
        out = entry.computation(*inputs)
        if kept and entry.prologue(args, kwargs) is None:
            # The call's own stores changed what its trace checks (a counter, a plain attribute reassigned): only
            # a call after something puts that state back can use it. Such entries, until one is used, are
            # kept up to MAX_UNUSED_SELF_INVALIDATED (else a counter adds one per call, each checked on every call)
            entry.self_invalidated = True
            waiting = [e for e in self.entries if e.self_invalidated]
            if len(waiting) > MAX_UNUSED_SELF_INVALIDATED:
                self.entries = [e for e in self.entries if e is not waiting[0]]
        return out

    def _inputs_after_own_writes(self, entry: CacheEntry, args, kwargs):
        """The fresh prologue rejected the inputs it was built from. When only its guards on hidden values
        failed, tracing changed state the trace depends on (a counter in a closure, a global list appended
        to, a config attribute set): the trace serves this call only, and the next call traces again, so the
        change happens once per call as in eager."""
        from ..frontend.prologue import CHECK_GLOBAL_STATE, CHECK_HIDDEN

        prologue = entry.prologue_traces[-1]
        unguarded = prologue.copy_with([b for b in prologue.bsyms if b.symbol not in (CHECK_HIDDEN, CHECK_GLOBAL_STATE)],
                                       "prologue without its guards on hidden values and torch's global state")
        inputs = unguarded.python_callable()(args, kwargs)
        if inputs is None:
            raise CompilerError("the function changed its own inputs' metadata (types, shapes, strides) while it "
                                "was traced; this is not supported:\n" + str(prologue))
        entry.rerun = entry.rerun or ["the function changed a global, closure or attribute value it reads, or "
                                      "torch's global state (the default dtype...)"]
        return inputs

    def executors_for(self, args, kwargs) -> tuple:
        """The executors this call compiles with: as given, or the default for its inputs' devices (the
        prologue guards devices, so a call on another device traces again and chooses again)."""
        if not self.default_executors:
            return self.executors
        return default_executors(input_device_types(args, kwargs, self.module))

    def compile(self, args, kwargs, replay=None) -> CacheEntry:
        start = time.perf_counter()
        kw = {"observers": self.observers}
        if self.module is not None:
            kw["module"] = self.module
        executors = self.executors_for(args, kwargs)
        # Symbolic numbers reach the torch executor only; fusing executors compile prims with the values baked
        # in: under symbolic values they get a fused plan per call's values (_FusedPerCall), traced from the
        # symbolic trace; other executors specialize (constant values), regions compiled for any size
        unfused = all(e in DEFAULT_EXECUTORS for e in executors)
        wants_symbolic = self.cache_option == "symbolic values"
        # symbolic values with a fusing executor: the trace stays symbolic; its fused plans are per call's values
        per_size = wants_symbolic and _fusing_and_defaults(executors)
        # a new continuation of a segmented entry is traced as its entry was
        sym = wants_symbolic and (unfused or per_size) and (replay is None or replay.symbolic)
        generic_regions = wants_symbolic and not unfused or self.generic_regions
        seg_executors = _unfused(executors) if per_size and sym else executors  # (segments: torch, symbolic)
        try:
            with _TRACING_LOCK, segments.segmenting(seg_executors, self.passes, replay), \
                    symbolic.requested(sym) as single_use:
                result: FrontendResult = self.frontend(self.fn, args, kwargs, **kw)
            result.rerun = list(result.rerun) + single_use
        except symbolic.Fallback:  # not expressible with symbolic numbers: this entry uses constant values
            sym = False
            with _TRACING_LOCK, segments.segmenting(executors, self.passes, replay), symbolic.requested(False):
                result = self.frontend(self.fn, args, kwargs, **kw)
        if result.segments is not None:
            comp = segments.SegmentedComputation(result.segments)
            comp.escapes = result.escapes
            traces = segments.traces_of(comp.first_nodes)
            return CacheEntry(result.prologue.python_callable(), comp, traces, [result.prologue], result.events,
                              time.perf_counter() - start, list(result.rerun), len(traces), sym)
        traces = run_passes(result.computation, *(() if self.passes is None else (self.passes,)))
        if per_size and sym:
            added, computation = plan_execution(traces[-1], _unfused(executors))
            if _not_retraceable(traces[-1]):  # (functionalization keeps such traces in eager order anyway)
                added[-1].header += ("; cache=\"symbolic values\" with a fusing executor: runs unfused (module "
                                     "backward hooks are set up on the real tensors)")
            else:
                added[-1].header += ("; cache=\"symbolic values\" with a fusing executor: this trace serves every "
                                     "size and number its constraints allow; each call's values get a fused plan of "
                                     "it (traced again from this trace, not from the user's Python; regions "
                                     "compiled for any size, numbers passed to them as inputs)")
                computation = _FusedPerCall(computation, executors, self.passes)
            if any(b.symbol.name in _MODE_SWITCHES for b in added[-1].bsyms):
                computation = _restoring_grad_mode(computation)
            if result.escapes is not None:
                computation = _patching_escapes(computation, result.escapes)
            traces += added
            prologue = result.prologue.python_callable()
            return CacheEntry(prologue, computation, traces, [result.prologue], result.events,
                              time.perf_counter() - start, list(result.rerun), symbolic=sym)
        with shape_generic(generic_regions):
            added, computation = plan_execution(traces[-1], executors)  # fusing executors: functional path
        if generic_regions:
            added[-1].header += ("; cache=\"symbolic values\" with a fusing executor: this trace is specialized "
                                 "to the call's sizes and numbers, its fusion regions are compiled for any size")
        traces += added
        execution = traces[-1]
        if any(b.symbol.name in _MODE_SWITCHES for b in execution.bsyms):
            computation = _restoring_grad_mode(computation)
        if result.escapes is not None:
            computation = _patching_escapes(computation, result.escapes)
        prologue = result.prologue.python_callable()
        return CacheEntry(prologue, computation, traces, [result.prologue], result.events,
                          time.perf_counter() - start, list(result.rerun), symbolic=sym)


def _uninitialized_lazy_module(fn, module) -> bool:
    """Whether the jitted module, or a module the function's code reaches (globals, closures), still has
    uninitialized (lazy) parameters or buffers."""
    from torch.nn.modules.lazy import LazyModuleMixin
    from torch.nn.parameter import is_lazy

    from ..frontend.hidden_inputs import hidden_values

    roots = [module] if module is not None else \
        [h.value for h in hidden_values(fn) if isinstance(h.value, torch.nn.Module) and h.check == "identity"]
    # (a LazyModuleMixin subclass with its own initialize_parameters may hold no uninitialized parameter: its
    # initializing pre-hook, which removes itself on the first call, says it has not run yet)
    return any(isinstance(sub, LazyModuleMixin) and hasattr(sub, "_initialize_hook") or
               any(is_lazy(t) for t in [*sub._parameters.values(), *sub._buffers.values()] if t is not None)
               for root in roots for sub in root.modules())


def _not_retraceable(trace) -> bool:
    """A symbolic trace whose torch-executor form the per-call plans cannot trace again: module backward hooks'
    setup ops run torch's BackwardHook on the real tensors (a trace of the trace would hand them proxies)."""
    names = {backward_hooks.SETUP_INPUTS.name, backward_hooks.SETUP_OUTPUTS.name}
    return any(b.symbol.name in names for b in trace.bsyms)


def _fusing_and_defaults(executors) -> bool:
    return any(getattr(e, "fuses", False) for e in executors) and \
        all(getattr(e, "fuses", False) or e in DEFAULT_EXECUTORS for e in executors)


def _unfused(executors) -> tuple:
    return tuple(e for e in executors if not getattr(e, "fuses", False)) or DEFAULT_EXECUTORS


class _FusedPerCall:
    """The computation of a symbolic trace under a fusing executor. The trace's torch-executor form is a
    straight-line function of tensors and numbers; a nested jit (constant values) traces THAT function per
    call's sizes and numbers and fuses it, so a new size costs a trace of the trace (no user Python, no
    decision re-made: the outer prologue checked them all) and reuses compiled regions (shape-generic keys).
    If that nested trace fails, the call runs the torch-executor form (same values, unfused)."""

    def __init__(self, unfused_computation, executors, passes):
        self.unfused = unfused_computation
        self.plans = JittedFunction(unfused_computation, cache="constant values", executors=executors,
                                    passes=passes)
        self.plans.generic_regions = True
        self.failure = None

    def __call__(self, *inputs):
        if self.failure is None:
            try:
                with epilogue.stores_recorded():  # (its stores: ops of the per-call trace, made when it runs)
                    return self.plans(*inputs)
            except CompilerError as e:
                if not getattr(e, "during_trace", True):
                    raise
                self.failure = e
        return self.unfused(*inputs)


def input_device_types(args, kwargs, module=None) -> set[str]:
    """Device types of the tensors a call passes (nested in containers too) and of the module's parameters
    and buffers."""
    from ..core import tree as pytree

    types = {t.device.type for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
    if module is not None:
        types |= {t.device.type for t in module.parameters()} | {t.device.type for t in module.buffers()}
    return types


def _patching_escapes(computation, escapes):
    # The trace returns (result, values it stored into objects outliving the call): those go where the
    # function stored them (compiler/frontend/escapes.py)
    def run(*inputs):
        try:
            out, escaped = computation(*inputs)
        except BaseException:
            escapes.patch_from({})  # (an argument or captured tensor stored before the raise: its real value)
            raise
        escapes.patch(escaped)
        return out

    return run


_MODE_SWITCHES = ("torch._C._set_grad_enabled", autocast.SET_AUTOCAST.name, torch_flags.SET_TORCH_FLAGS.name)


def _restoring_grad_mode(computation):
    # The trace switches grad mode (a `no_grad` block), autocast or torch's switches (`sdpa_kernel`); if an op
    # raises midway, put the caller's state back (the trace restores grad mode and autocast itself otherwise;
    # torch's switches stay as the function left them, as in eager).
    def run(*inputs):
        mode, cast, flags = torch.is_grad_enabled(), autocast.current(), torch_flags.current()
        ok = False
        try:
            out = computation(*inputs)
            ok = True
            return out
        finally:
            torch._C._set_grad_enabled(mode)
            autocast.set_state(cast)
            if not ok:
                torch_flags.set_state(flags)

    return run


class JittedModule(torch.nn.Module):
    """jit(module): a module whose forward runs the compiled trace; parameters and buffers stay the
    original module's (they are inputs of every call, so updates and optimizers work as usual)."""

    def __init__(self, module: torch.nn.Module, **options):
        super().__init__()
        self._model = module
        self._options = options
        # The trace calls the module's __call__ (hooks included) with parameters swapped for proxies.
        self._jitted = JittedFunction(module, module=module, **options)

    # It behaves as the module it wraps: state and parameter names carry no `_model.` prefix.
    def state_dict(self, *args, **kwargs):
        return self._model.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self._model.load_state_dict(state_dict, strict=strict, assign=assign)

    def named_parameters(self, *args, **kwargs):
        return self._model.named_parameters(*args, **kwargs)

    def named_buffers(self, *args, **kwargs):
        return self._model.named_buffers(*args, **kwargs)

    def named_modules(self, *args, **kwargs):
        return self._model.named_modules(*args, **kwargs)

    def named_children(self):
        return self._model.named_children()

    def train(self, mode: bool = True):
        self._model.train(mode)
        self.training = mode
        return self

    def _apply(self, fn, recurse=True):  # to(), cuda(), float(), ...: on the module itself
        self._model._apply(fn, recurse)
        return self

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_model"], name)

    def __getstate__(self):  # pickling: the module and the options; compiled traces are rebuilt on use
        return {"module": self._model, "options": self._options}

    def __setstate__(self, state):
        self.__init__(state["module"], **state["options"])

    def __repr__(self):
        return f"JittedModule({self._model!r})"

    def forward(self, *args, **kwargs):
        return self._jitted(*args, **kwargs)

    def __call__(self, *args, **kwargs):  # skip nn.Module.__call__'s hook machinery: the trace has it
        return self._jitted(*args, **kwargs)
