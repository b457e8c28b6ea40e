"""The interpreting front end, compiler.jit's default: the user's function runs under the bytecode
interpreter (compiler.interpreter) over proxies, inside the native front end's tracing context.

What the interpreter sees decides how the trace may be cached:
- every global and closure cell that user code reads is guarded by the prologue (beyond the names found
  statically), so rebinding it re-traces, also inside methods reached only through attributes;
- Python effects a cached trace cannot repeat make the trace single-use: the next call traces again, so
  the effect happens once per call as in eager. They are writes or deletes of globals and of cells that
  live outside the call, in-place changes of lists/dicts/sets and attribute writes of objects not made
  during the call (a hook object's `self.log.append(...)`, `cfg.count += 1` on a global object; the
  module-held containers the epilogue stores and module/tensor attributes are handled there), side-effect
  calls (print, random, time, ...), and calls that read state from outside the program (os.environ,
  ContextVar.get, time, random, ...). `FrontendResult.rerun` says why;
- if tracing fails, the globals and cells it wrote are put back, so a refused call changes nothing there.
"""
from __future__ import annotations

import contextvars
import functools
import os
import sys
import types

import torch

from ..features import autograd_function
from . import recursion
from ..symbolic import values as symbolic
from ..core.context import current_state, tracing
from ..symbolic.builtin_answers import traced_type
from ..core.context import mark_container_write, mark_write
from . import escapes
from .module_reads import AttributeReads
from .native import FrontendResult, holds_proxy, native_frontend
from .hidden_inputs import UNSET, HiddenValue, by_value, expand, library_file, write_slot
from ..interpreter import Interpreter, InterpreterError, events as ev, provenance
from ..core.errors import CompilerError
from ..interpreter.classify import reads_outside_state
from ..interpreter.opcodes_data import ABSENT
from ..core.proxies import Proxy
from ..core.source import interpreting
from .lookasides import interpreter_lookasides as torch_lookasides

_COMPILER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # compiler/


@functools.lru_cache(maxsize=1)
def trusted_paths() -> tuple[str, ...]:
    """compiler/'s own folders and files whose Python runs natively under the interpreter (proxies, the
    tracer): everything in compiler/ but the interpreter itself."""
    return tuple(os.path.join(_COMPILER_DIR, name) for name in sorted(os.listdir(_COMPILER_DIR))
                 if name != "interpreter")


def _varies_between_calls(callee, value) -> bool:
    """An opaque native call whose result may differ from call to call with the same arguments (a torch
    op's result is a proxy recorded into the trace, never such a value)."""
    return not holds_proxy(value) and reads_outside_state(callee)


_ENVIRON_GET = os._Environ.__getitem__


def _environ_key(arguments) -> bool:
    return arguments is not None and len(arguments) == 2 and arguments[0] is os.environ and type(arguments[1]) is str


def _attribute(obj, name):
    """The value an attribute holds (ABSENT where it has none), read without running user Python where
    possible (the instance dict first)."""
    holder = getattr(obj, "__dict__", None)
    if isinstance(holder, dict) and name in holder:
        return holder[name]
    try:
        return getattr(obj, name)
    except Exception:  # noqa: BLE001 - any failure to read is "no value"
        return ABSENT


class CallEffects:
    """Interpreter observer: the hidden values user code read, the writes it made outside the call, and
    the reasons a trace of it cannot be reused."""

    def __init__(self, module=None):
        # the jitted module's tree: the epilogue stores what the code writes there; a write to another module
        # (`models[0].training = False` on a global list) is an effect a cached trace cannot repeat
        self.own_modules = {id(m) for m in module.modules()} if module is not None else set()
        self.reads: list[HiddenValue] = []  # expanded when first read: guards check the values read
        self._read_slots: set = set()
        self.writes: list[tuple] = []  # (holder, key, previous value), in order
        self.rerun: list[str] = []
        self.read_values: dict = {}  # id -> a value read from a global or an outside closure cell
        self.touched: dict = {}  # id -> object outliving the call that it changed (a container, an attribute's owner)
        # (id, name) -> (object, name, value before the call's first write, reason): plain objects' attributes
        self.attribute_slots: dict = {}

        self.context_vars: dict = {}  # id -> (ContextVar, its value before the call's first set, reason)
        self.argument_objects: dict = {}  # id -> argument objects holding tensors (filled by the front end)

    def changed_attributes(self) -> list[str]:
        """Why the trace is single-use: attributes of outliving plain objects, and ContextVars, that the call
        left changed (a value set and put back, as transformers' output capturing does, is no effect)."""
        return [reason for obj, name, before, reason in self.attribute_slots.values()
                if _attribute(obj, name) is not before] + \
            [reason for var, before, reason in self.context_vars.values() if var.get(UNSET) is not before]

    def _context_var(self, var, method: str, value, where) -> None:
        """ContextVar.get before the call sets it: a guarded input (its value, or its identity); set/reset: the
        value before the first set is remembered, and the call must leave it so (else the trace is single-use)."""
        if method == "get":
            if id(var) not in self.context_vars and ("contextvar", id(var)) not in self._read_slots:
                self._read_slots.add(("contextvar", id(var)))
                now = var.get(UNSET)
                self.reads.append(HiddenValue("contextvar", var, var.name, now, f"ContextVar {var.name!r}",
                                              check="value" if by_value(now) else "identity"))
            return
        if id(var) in self.context_vars:
            return
        if method == "set" and isinstance(value, contextvars.Token):
            before = UNSET if value.old_value is contextvars.Token.MISSING else value.old_value
            self.context_vars[id(var)] = (var, before, f"{where}: sets ContextVar {var.name!r} and leaves it changed")
        else:  # a reset of a set made before the call: the call changes it
            self.rerun.append(f"{where}: resets ContextVar {var.name!r} to a value set before the call")

    def __call__(self, event) -> None:
        kind, d, where = event.kind, event.details, event.location
        if kind == ev.GLOBAL_READ or (kind == ev.CLOSURE_READ and not d.get("internal")):
            self.read_values[id(event.value)] = event.value
            holder = d["holder"]
            if (id(holder), event.name) in self._read_slots or where is None or library_file(where.filename):
                return
            self._read_slots.add((id(holder), event.name))
            if isinstance(event.value, types.ModuleType):
                return  # the module binding; its attributes are guarded where read statically
            if holds_proxy(event.value):
                return  # a value this call stored there (`nonlocal box; box = x.cos()`, then read): no hidden input
            label = f"{where.function}.__globals__[{event.name!r}]" if kind == ev.GLOBAL_READ else \
                f"{where.function} closure cell {event.name!r}"
            self.reads += expand(HiddenValue("global" if kind == ev.GLOBAL_READ else "cell", holder, event.name,
                                             event.value, label))
            return
        if kind == ev.DEFAULT_READ:  # a user function called with a default: `f.__defaults__ = ...` re-traces
            fn = event.value
            if ("defaults", id(fn)) not in self._read_slots and not library_file(fn.__code__.co_filename):
                self._read_slots.add(("defaults", id(fn)))
                for attr in ("__defaults__", "__kwdefaults__"):
                    self.reads += expand(HiddenValue("attribute", fn, attr, getattr(fn, attr),
                                                     f"{fn.__qualname__}.{attr}"))
            return
        if kind in (ev.GLOBAL_WRITE, ev.GLOBAL_DELETE, ev.NONLOCAL_WRITE, ev.NONLOCAL_DELETE):
            if d.get("internal"):
                return  # a cell created inside this call: part of the computation
            self.writes.append((d["holder"], event.name, d["previous"]))
            # (where the epilogue's stores go, if it stores a traced value)
            mark_write(d["holder"], event.name, *((event.value,) if kind.endswith("write") else ()))
            verb = "writes" if kind.endswith("write") else "deletes"
            what = "the global" if kind.startswith("global") else "the variable"
            self.rerun.append(f"{where}: {verb} {what} {event.name!r}, which outlives the call")
        elif kind == ev.CONTAINER_WRITE:
            self.touched[id(event.value)] = event.value  # (what it stored there may be a traced value)
            if d.get("watched"):
                mark_container_write(event.value)  # (a module-held list/dict: where its contents store goes)
            else:  # (containers made during the call are not reported)
                self.rerun.append(f"{where}: changes a {type(event.value).__name__} that outlives the call "
                                  f"({event.name})")
        elif kind == ev.ATTRIBUTE_WRITE:
            self.touched[id(event.value)] = event.value
            if isinstance(event.value, torch.nn.Module) and id(event.value) not in self.own_modules:
                self.rerun.append(f"{where}: sets attribute {event.name!r} of a {type(event.value).__name__} module "
                                  f"that is not part of the jitted module")
            elif id(event.value) in self.argument_objects:
                pass  # an argument holding tensors: the front end stores what the call assigns (state_objects.py)
            elif not isinstance(event.value, (torch.nn.Module, torch.Tensor, Proxy)):  # (epilogue, training_step)
                # an effect only if the call leaves it changed: a value set and put back before the call ends
                # (transformers' and kernels' CompileableContextVar under is_compiling) leaves nothing to repeat
                key = (id(event.value), event.name)
                if key not in self.attribute_slots:
                    self.attribute_slots[key] = (event.value, event.name, _attribute(event.value, event.name),
                                                 f"{where}: sets attribute {event.name!r} of a "
                                                 f"{type(event.value).__name__} object that outlives the call")
        elif kind == ev.SIDE_EFFECT_CALL:
            self.rerun.append(f"{where}: calls {event.name}, a side effect")
        elif kind == ev.OPAQUE_CALL and d.get("for_real"):  # (run natively on real values: once per call)
            self.rerun.append(f"{where}: {event.name} {d['for_real']}")
        elif kind == ev.OPAQUE_CALL and d.get("callee") is _ENVIRON_GET and _environ_key(d.get("arguments")):
            key = d["arguments"][1]  # os.environ[key] (also inside .get): guarded by value, None where unset
            if ("environ", key) not in self._read_slots:
                self._read_slots.add(("environ", key))
                self.reads.append(HiddenValue("environ", os.environ, key, os.environ.get(key),
                                              f"os.environ[{key!r}]", check="value"))
        elif kind == ev.OPAQUE_CALL and isinstance(getattr(d.get("callee"), "__self__", None), contextvars.ContextVar) \
                and getattr(d["callee"], "__name__", "") in ("get", "set", "reset"):
            self._context_var(d["callee"].__self__, d["callee"].__name__, event.value, where)
        elif kind == ev.OPAQUE_CALL and _varies_between_calls(d.get("callee"), event.value):
            self.rerun.append(f"{where}: calls {event.name}, whose result can change between calls")

    def undo_writes(self) -> None:
        """Put back every global and cell written, newest first."""
        for holder, key, previous in reversed(self.writes):
            write_slot(holder, key, previous, ABSENT)
        self.writes.clear()


_LOOKASIDES = {type: traced_type, **torch_lookasides(), autograd_function.APPLY: autograd_function.apply}


@functools.lru_cache(maxsize=1)
def _symbolic_lookasides() -> dict:
    return {**_LOOKASIDES, **symbolic.lookasides()}  # int(), float(), bool(), math.* record scalar ops


def _dynamo_bookkeeping() -> None:
    """Once torch.compile has run in the process, dynamo's patched nn.Module.__init__ tags every new module in its
    own weak dictionary (GenerationTracker.tag). Interpreted, that write into a dict that outlives the call is a
    Python effect that ends a segment (transformers' models split in two after any torch.compile in the same
    process): it is dynamo's bookkeeping, so it runs natively, as dynamo needs it, and is no effect of the call.
    Added on the first call after torch._dynamo is loaded (loading it here would cost every process ~1 s)."""
    mutation_guard = sys.modules.get("torch._dynamo.mutation_guard")
    tracker = getattr(mutation_guard, "GenerationTracker", None)
    tag = getattr(getattr(tracker, "tag", None), "__func__", None)
    if tag is None or tag in _LOOKASIDES:
        return
    _LOOKASIDES[tag] = tag  # called natively by the interpreter with (cls, module)
    _symbolic_lookasides.cache_clear()


class InterpretedCall:
    """The user's function as the native front end calls it: calling it interprets it."""

    def __init__(self, fn, observers=(), on_interpreter=None):
        self.fn = fn
        self.observers = tuple(observers)
        self.on_interpreter = on_interpreter
        self.fresh = None  # after the call: the objects it made (the interpreter's `fresh`)
        self.roots = lambda: []  # the state it read (global and closure values, the module): set by the front end
        self.own_modules = set()  # ids of the jitted module's tree (set by the front end)
        self._known = None
        self.arguments: list = []  # the caller's arguments (not the proxied copies): what they reach existed before
        self.attribute_reads = None  # module_reads.AttributeReads: module attributes read before they are written

    def __call__(self, *args, **kwargs):
        check_stack = os.environ.get("THUNDER_LINT_CHECK_STACK", "") not in ("", "0")
        _dynamo_bookkeeping()
        state = current_state()
        symbolic_values = state is not None and state.symbolic
        interp = Interpreter(self.observers, _symbolic_lookasides() if symbolic_values else _LOOKASIDES,
                             check_stack=check_stack, native_paths=trusted_paths())
        interp.uncatchable = (InterpreterError, CompilerError)  # a refusal is never the program's own exception
        if symbolic_values:
            interp.native_args = symbolic.native_args
        if state is not None:
            interp.watched_containers = state.tracked_containers  # module-held: their changes mark the epilogue
            if state.segmenter is not None:
                interp.before_effect = lambda frame, target: self._before_effect(state, interp, frame, target)
            interp.run_outside = lambda fn, a, k: _run_outside(state, fn, a, k)
        interp.fresh = {}  # (changes to objects made during the call are not effects outside it)
        if self.attribute_reads is not None:
            self.attribute_reads.install(interp)
        if self.on_interpreter is not None:
            self.on_interpreter(interp)
        provs = [provenance.Argument(f"args[{i}]") for i in range(len(args))]
        kwprovs = {k: provenance.Argument(f"kwargs[{k!r}]") for k in kwargs}
        try:
            with interpreting(interp), recursion.eager_depth(interp, recursion.user_depth()):
                value, _ = interp.call(None, self.fn, tuple(args), dict(kwargs), provs, kwprovs)
                self._close_dropped_generators(interp, value)
        finally:
            interp.ended = True  # (generators it made and left suspended hold proxies: they must not run on later)
            self.fresh = interp.fresh
            if self.on_interpreter is not None:
                self.on_interpreter(None)
            # the native frame that called in (this one) holds `interp`: a cycle through every frame below,
            # the jitted call's inputs and outputs included, until the garbage collector runs. Eager frees them
            interp.native_caller = None
        return value

    def _close_dropped_generators(self, interp, value) -> None:
        """Generators the call made and left suspended (a @contextmanager entered and never exited) that nothing
        outliving the call holds are closed as the call ends, while it is traced, as eager closes them when the
        call's frame dies: their `finally` runs then (the interpreter's `fresh` dict kept them alive past tracing,
        where their finally ran untraced code on proxies, or never)."""
        from ..interpreter.interpreter import driven_generator

        pending = [g for g in interp.fresh.values() if driven_generator(g) and g.gi_frame is not None
                   and not g.gi_running]
        if not pending:
            return
        held = escapes.reachable_ids([value, *self.roots(), *self.arguments])
        kept = [g for g in pending if id(g) in held]
        if kept:  # (its frame is the interpreter's, over this trace's stand-ins: it cannot run on after the call)
            made = getattr(kept[0].gi_frame.f_locals.get("frame"), "code", None)  # (the driver's interpreted frame)
            raise CompilerError(f"a generator made inside the jitted function ({getattr(made, 'co_qualname', '?')}) "
                                "is kept after the call (returned, or stored where the call's caller can reach it); "
                                "the compiler cannot hand it out: make it outside the jitted function and pass it in")
        for g in reversed(pending):  # (the newest first, as the frames that made them unwind)
            if g.gi_frame.f_lasti >= 0:  # (one never started has no code to finish)
                g.close()

    def _before_effect(self, state, interp, frame, target) -> None:
        """A Python effect a cached trace cannot repeat is about to happen (the trace is single-use): the ops
        before it run first (compiler/frontend/segments.Segmenter.flush), so that one failing fails first."""
        if target is not None and (id(target) in interp.watched_containers or isinstance(target, (Proxy, torch.Tensor))
                                   or isinstance(target, torch.nn.Module) and id(target) in self.own_modules):
            return  # (stored by the epilogue, or not an effect of this kind)
        if target is not None and not isinstance(target, torch.nn.Module) and not interp.is_container(target):
            # an attribute of a plain object: an effect only if the call leaves it changed (CallEffects), which
            # is known at the end; a flush here would split every set-and-put-back pair into segments
            return
        state.segmenter.flush("a Python effect", frame.location() if frame is not None else None)

    def made_by_call(self, obj) -> bool:
        return self.fresh is not None and self.fresh.get(id(obj)) is obj

    def pre_existing(self, obj) -> bool:
        """An object the call did not make, reachable from the state it read (a global list, a closure's
        dict, the jitted module's attributes): returned by identity, as eager returns it."""
        if self.fresh is None or self.fresh.get(id(obj)) is obj:
            return False
        if self._known is None:
            self._known = escapes.reachable_ids(self.roots())
        return id(obj) in self._known


def _run_outside(state, fn, args, kwargs):
    """Code the interpreter runs natively as an effect (Interpreter.run_for_real): a generator made outside the call
    advanced by it (a @contextmanager object passed in, entered or exited inside: its frame is native), an
    autograd.Function whose forward has Python effects. It runs on real values and out of the trace (the ops before
    it ran for real first: _before_effect), once per call as in eager (the trace is single-use: CallEffects)."""
    from ..core.proxies import TensorProxy
    from ..core.tree import tree_map

    if state.segmenter is None:
        raise CompilerError(f"{fn!r} runs natively on real values as an effect (a generator made outside the call, "
                            "an autograd.Function forward with Python effects): only compiler.jit can run it so")
    known = {**state.real_inputs, **{p.name: real for real, p in state.captured}, **state.segmenter.env}

    def real(v):
        if isinstance(v, TensorProxy):
            if v.name not in known:
                raise CompilerError(f"{fn!r}: a traced tensor ({v.name}) goes to code run natively before its value "
                                    "is computed")
            return known[v.name]
        return v

    args, kwargs = tree_map(real, (tuple(args), dict(kwargs)))
    with torch._C.DisableTorchFunction(), tracing(None):
        return fn(*args, **kwargs)


def interpreted_frontend(fn, args, kwargs, *, observers=(), interpreter_observers=(), on_interpreter=None,
                         **options) -> FrontendResult:
    """The signature of native_frontend, plus: ``interpreter_observers`` get the interpreter's events
    (compiler.interpreter.events), ``on_interpreter(interp)`` is told the interpreter while it runs
    (and None after)."""
    effects = CallEffects(options.get("module"))
    reads = AttributeReads(effects.own_modules)
    call = InterpretedCall(fn, (effects, reads, *interpreter_observers), on_interpreter)
    call.attribute_reads = reads
    call.argument_objects = effects.argument_objects
    module = options.get("module")
    call.own_modules = effects.own_modules
    call.arguments = [*args, *kwargs.values()]  # (a DynamicCache passed in and returned: by identity)
    call.roots = lambda: [*effects.read_values.values(), *effects.touched.values(), *call.arguments,
                          *([module] if module is not None else [])]
    try:
        result = native_frontend(fn, args, kwargs, observers=observers, call=call,
                                 hidden_reads=lambda: effects.reads,
                                 written_objects=lambda: list(effects.touched.values()), **options)
    except BaseException as e:
        if not getattr(e, "thunder_effects_kept", False):  # a refusal: put back what tracing wrote
            effects.undo_writes()
        raise
    finally:
        call.arguments = []  # (the caller's tensors: no trace may keep them)
    result.rerun = effects.rerun + effects.changed_attributes() + result.rerun
    return result
