"""The interpreter: runs frames instruction by instruction, dispatches calls (interpreting Python
functions recursively, lookasides, opaque native calls), drives generators, and emits events."""
from __future__ import annotations

import collections
import dis
import functools
import sys
import types
import weakref

from . import events as ev
from . import provenance as pv
from .classify import RANDOM_INSTANCE, RUN_NATIVELY_IDS, is_pure, is_side_effect
from .decode import CO_GENERATOR, VERSION, code_info
from .errors import InterpreterError
from .frame import NULL, Frame
from .native import bind_arguments
from .registry import HANDLERS, Outcome

_NOT_FOUND = object()
_OBJECT_GETATTRIBUTE = object.__getattribute__
_HEAPTYPE = 1 << 9  # classes made by `class` statements


# list/dict methods that change the container (observers told by a CONTAINER_WRITE event)
_CONTAINER_MUTATORS = frozenset(("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                                 "update", "setdefault", "popitem", "__setitem__", "__delitem__", "__iadd__",
                                 "__imul__", "__ior__", "add", "discard", "difference_update",
                                 "intersection_update", "symmetric_difference_update", "appendleft", "extendleft",
                                 "popleft", "rotate"))
# Python values changed in place by those methods (a CONTAINER_WRITE when the container is not fresh)
CONTAINER_TYPES = (list, dict, set, bytearray, collections.deque)
_UNBOUND_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)
_ATTRIBUTE_WRITERS = {id(f): f for f in (setattr, delattr, object.__setattr__, object.__delattr__)}


class Tracked:
    """A value with its provenance, handed to lookasides marked with `with_provenance`."""

    __slots__ = ("value", "provenance")

    def __init__(self, value, provenance):
        self.value = value
        self.provenance = provenance

    def __repr__(self):
        return f"Tracked({self.value!r}, {self.provenance})"


def with_provenance(replacement):
    """Mark a lookaside replacement to receive Tracked arguments (it may return a Tracked too)."""
    replacement.__interpreter_wants_provenance__ = True
    return replacement


def _internal_lookaside(*targets):
    def register(fn):
        for target in targets:
            INTERNAL_LOOKASIDES[id(target)] = (target, fn)
        return fn
    return register


# id(callable) -> (callable, handler(interp, frame, args, kwargs, provs, kwprovs) -> (value, prov))
INTERNAL_LOOKASIDES: dict = {}

def _catches(info, offset: int) -> bool:
    """Whether an except clause guards the instruction at `offset` (kept with the code's CodeInfo)."""
    hit = info.catches.get(offset)
    if hit is None:
        hit = False
        entry = info.handler_for(offset)
        if entry is not None:
            start = info.index_of.get(entry.target)
            following = info.instructions[start + 1:start + 24] if start is not None else []
            if following and following[0].opname == "POP_TOP":  # a bare `except:`
                hit = True
            for i, ins in enumerate(following):
                if ins.opname in ("RERAISE", "WITH_EXCEPT_START"):  # finally, a with-block's exit
                    break
                if ins.opname == "CHECK_EXC_MATCH":
                    hit = not _only_type_errors(info, following, i)
                    break
                if ins.opname == "CHECK_EG_MATCH":  # except*
                    hit = True
                    break
        info.catches[offset] = hit
    return hit


def _only_type_errors(info, following, i: int) -> bool:
    """The handler is one `except TypeError:` clause (torch wraps every Tensor dunder in one, to return
    NotImplemented): it cannot catch what depends on sizes, values or memory (those raise RuntimeError, IndexError,
    ValueError), so code it guards is not code whose errors the program may catch."""
    if i == 0 or i + 1 >= len(following) or following[i - 1].argval != "TypeError" or \
            following[i - 1].opname not in ("LOAD_GLOBAL", "LOAD_NAME"):
        return False
    jump = following[i + 1]
    if not (jump.opname.startswith("POP_JUMP") and "FALSE" in jump.opname):
        return False
    target = info.index_of.get(jump.argval)
    return target is not None and info.instructions[target].opname == "RERAISE"


class Interpreter:
    def __init__(self, observers=(), lookasides=None, *, check_stack: bool = False, native_paths=()):
        self.observers = tuple(observers)
        self.native_paths = tuple(native_paths)  # source path prefixes whose Python code runs natively
        # Keyed by identity: looking a callable up must never run user code (__hash__/__eq__).
        self.lookasides = {id(k): (k, v) for k, v in (lookasides or {}).items()}
        self.check_stack = check_stack
        # Exceptions no `except` clause (or `__exit__` returning True) of the interpreted program may catch: the
        # interpreter's own, and what the embedder adds (a compiler's refusals: a program's `except RuntimeError`
        # must not take them for its own). finally blocks and with-blocks' exits still run on their way out.
        self.uncatchable: tuple = (InterpreterError,)
        # (fn, args, kwargs) -> (args, kwargs): what native code receives (the embedder's symbolic numbers
        # become plain values there; see compiler/symbolic/). None: arguments pass unchanged.
        self.native_args = None
        self.watched_containers: set = set()  # ids of lists/dicts whose in-place changes are CONTAINER_WRITE events
        # called before a change of state outliving the run (an object not made during it, a global, a cell from
        # outside, a side-effect call): (frame, the object or None) -> None
        self.before_effect = None
        # runs what run_for_real hands it (the code of a generator made outside the run that the program advances:
        # next, send, throw, close, a for loop, `yield from`; what an embedder's lookaside cannot trace):
        # (callable, args, kwargs) -> value. None: a plain native call. An embedder tracing over stand-in values
        # runs it on the real ones (an effect on outliving state: the generator's frame)
        self.run_outside = None
        self.defaults_read: dict = {}  # id -> function whose defaults a call used (reported once: DEFAULT_READ)
        # set by an embedder whose run's values die with it (a tracer's stand-ins): generators the run made and left
        # suspended then end without running more of their code (a close runs no finally), and refuse to resume
        self.ended = False
        # Objects made during this run (literals, constructed instances, unshared results of native calls): their
        # in-place changes and attribute writes are the computation's own, not effects on state that outlives the
        # run. None (the default): not tracked, every change of a container or attribute is reported. The dict
        # keeps them alive for the run, so an id is never reused by an object made elsewhere.
        self.fresh: dict | None = None
        self.frames = 0  # frames interpreted so far (tests use it to prove code was interpreted)
        self.active: list = []  # interpreted frames now executing, innermost last (for sys._getframe)
        self.depth_limit = None  # most interpreted frames at once (the embedder sets it; see recursion.py)
        self.native_caller = None  # the native frame that called into the interpreter
        self._trampolines: dict = {}  # id(globals) -> (globals, trampoline function)
        self.current_exc = None  # the exception being handled by interpreted code (sys.exc_info())
        # except*: the groups CHECK_EG_MATCH handed to handlers, and those of them a handler raised again by name
        # (`raise e`), which CPython counts as a new exception (its traceback grows) where a bare `raise` re-raises
        # the original's part. Weak: they live as long as the program holds them.
        self.eg_matches = weakref.WeakValueDictionary()
        self.eg_raised_by_name = weakref.WeakValueDictionary()
        self.internal_cells: dict = {}  # id -> cell created by interpreted code (kept alive for the run)
        self.cell_provs: dict = {}  # id(cell) -> (cell, provenance of its last interpreted write)
        self.opcode_handlers = [_unsupported_opcode] * 256
        for name, handler in HANDLERS.items():
            self.opcode_handlers[dis.opmap[name]] = handler

    # ----- events -----
    def emit(self, kind, name, frame, value=None, provenance=None, **details):
        if not self.observers:
            return
        location = frame.location() if frame is not None else None
        event = ev.Event(kind, name, location, value, provenance, details)
        for observer in self.observers:
            observer(event)

    # ----- objects made during the run, and changes to the others -----
    def note_fresh(self, value):
        if self.fresh is not None:
            self.fresh[id(value)] = value
        return value

    def note_if_unshared(self, value, references: int):
        """A native result that nothing but the caller's `references` refer to was made by that call."""
        if self.fresh is None:
            return
        kind = type(value)
        if (isinstance(value, CONTAINER_TYPES) or kind is types.SimpleNamespace or
                (kind.__flags__ & _HEAPTYPE and not hasattr(kind, "__torch_function__"))) and \
                sys.getrefcount(value) <= references + 2:  # (+ this parameter and getrefcount's own argument;
            self.fresh[id(value)] = value                  # tensors are left out: kept alive for nothing)

    def is_fresh(self, obj) -> bool:
        return self.fresh is not None and self.fresh.get(id(obj)) is obj

    @staticmethod
    def is_container(value) -> bool:
        return isinstance(value, CONTAINER_TYPES)

    def before_change(self, frame, target=None):
        """A change of `target` (None: a global, an outside cell, a side effect) is about to happen."""
        if self.before_effect is not None and (target is None or not self.is_fresh(target)):
            self.before_effect(frame, target)

    def container_changed(self, frame, name, container):
        """`container` (a list/dict/set...) was changed in place: observers hear it unless it is fresh."""
        if isinstance(container, CONTAINER_TYPES) and not self.is_fresh(container):
            self.emit(ev.CONTAINER_WRITE, name, frame, container, watched=id(container) in self.watched_containers)

    def attribute_changed(self, frame, obj, name):
        """An attribute of `obj` is about to be set or deleted: observers hear it unless `obj` is fresh."""
        if self.observers and not self.is_fresh(obj):
            self.before_change(frame, obj)
            self.emit(ev.ATTRIBUTE_WRITE, name, frame, obj)

    # ----- lookasides -----
    def user_lookaside(self, fn):
        if not self.lookasides:
            return None
        hit = self.lookasides.get(id(fn))
        return hit[1] if hit is not None and hit[0] is fn else None

    def _call_user_lookaside(self, replacement, args, kwargs, provs, kwprovs):
        if getattr(replacement, "__interpreter_wants_provenance__", False):
            out = replacement(*[Tracked(a, p) for a, p in zip(args, provs)],
                              **{k: Tracked(v, kwprovs.get(k, pv.UNKNOWN)) for k, v in kwargs.items()})
            if isinstance(out, Tracked):
                return out.value, out.provenance
            return out, pv.Computed(f"lookaside {pv.describe_callee(replacement)}", tuple(provs))
        out = replacement(*args, **kwargs)
        return out, pv.Computed(f"lookaside {pv.describe_callee(replacement)}",
                                tuple(provs) + tuple(kwprovs.values()))

    # ----- calls -----
    def call(self, frame, fn, args, kwargs, provs, kwprovs):
        """Call `fn` from interpreted code (frame None: from outside); returns (value, provenance)."""
        if frame is None and self.native_caller is None:
            self.native_caller = _outside_caller()
        if _ATTRIBUTE_WRITERS.get(id(fn)) is fn and len(args) >= 2:  # setattr(obj, name, ...) & co.
            self.attribute_changed(frame, args[0], args[1])
        replacement = self.user_lookaside(fn)
        if replacement is not None:
            value, prov = self._call_user_lookaside(replacement, args, kwargs, provs, kwprovs)
            self.note_if_unshared(value, 1)
            return value, prov
        internal = INTERNAL_LOOKASIDES.get(id(fn))
        if internal is not None and internal[0] is fn:
            value, prov = internal[1](self, frame, args, kwargs, provs, kwprovs)
            self.note_if_unshared(value, 1)  # (list(...), sorted(...), set(...))
            return value, prov
        kind = type(fn)
        if kind is types.FunctionType:
            info = code_info(fn.__code__)
            if info.interpretable and id(fn) not in RUN_NATIVELY_IDS and \
                    not (self.native_paths and info.code.co_filename.startswith(self.native_paths)):
                new_frame = self.make_frame(fn, args, kwargs, provs, kwprovs, info)  # inlined call_function
                if info.code.co_flags & CO_GENERATOR:
                    generator = self.note_fresh(self._drive_generator(new_frame))
                    return generator, pv.Computed(f"generator {fn.__qualname__}")
                outcome = self.execute(new_frame)
                return outcome.value, outcome.prov
        elif kind is types.MethodType:
            if fn.__self__ is RANDOM_INSTANCE:  # random.randint & co.: one side-effect call, not its internals
                return self.call_native(frame, fn, args, kwargs, provs, kwprovs)
            if self.user_lookaside(fn.__func__) is not None or type(fn.__func__) is types.FunctionType:
                self_prov = pv.Computed("bound self")
                return self.call(frame, fn.__func__, (fn.__self__, *args), kwargs, (self_prov, *provs), kwprovs)
        elif kind is functools.partial:
            merged = {**fn.keywords, **kwargs}
            mprovs = {k: kwprovs.get(k, pv.Attribute(pv.UNKNOWN, "keywords")) for k in merged}
            return self.call(frame, fn.func, (*fn.args, *args), merged,
                             (*[pv.Computed("partial argument")] * len(fn.args), *provs), mprovs)
        elif kind is types.BuiltinMethodType or kind is types.MethodWrapperType:
            owner = fn.__self__
            if self.lookasides and owner is not None and not isinstance(owner, types.ModuleType):
                unbound = getattr(type(owner), fn.__name__, None)
                if unbound is not None and self.user_lookaside(unbound) is not None:
                    return self._call_user_lookaside(self.user_lookaside(unbound), (owner, *args), kwargs,
                                                     (pv.Computed("bound self"), *provs), kwprovs)
        elif isinstance(fn, type):
            created = self._construct(frame, fn, args, kwargs, provs, kwprovs)
            if created is not _NOT_FOUND:
                return created
        else:
            call_method = getattr(kind, "__call__", None)
            if type(call_method) is types.FunctionType:  # instances of Python classes (nn.Module, ...)
                return self.call(frame, call_method, (fn, *args), kwargs, (pv.Computed("callable object"), *provs),
                                 kwprovs)
        return self.call_native(frame, fn, args, kwargs, provs, kwprovs)

    def call_native(self, frame, fn, args, kwargs, provs, kwprovs):
        if self.native_args is not None:
            args, kwargs = self.native_args(fn, args, kwargs)
        owner = getattr(fn, "__self__", None)
        if type(fn) in _UNBOUND_METHODS and args and issubclass(fn.__objclass__, CONTAINER_TYPES):
            owner = args[0]  # list.append(lst, x), dict.__setitem__(d, k, v)
        if is_pure(fn) and not self.advances_outside_generator(fn, args):
            if isinstance(owner, CONTAINER_TYPES) and fn.__name__ in _CONTAINER_MUTATORS:
                self.before_change(frame, owner)
            value = fn(*args, **kwargs)
            if isinstance(owner, CONTAINER_TYPES) and fn.__name__ in _CONTAINER_MUTATORS:
                self.container_changed(frame, fn.__name__, owner)  # (after: observers may read its contents)
            self.note_if_unshared(value, 1)
            return value, pv.Computed("call", tuple(provs) + tuple(kwprovs.values()))
        name = pv.describe_callee(fn)
        if self.advances_outside_generator(fn, args):
            return self.advance_outside_generator(frame, fn, args, kwargs, provs, kwprovs)
        side_effect = is_side_effect(fn)
        if side_effect:
            self.before_change(frame, None)
        elif isinstance(owner, CONTAINER_TYPES) and getattr(fn, "__name__", None) in _CONTAINER_MUTATORS:
            self.before_change(frame, owner)
        try:
            if frame is not None:  # call from a Python frame with the user's globals: see _trampoline
                value = self._trampoline(frame.globals)(fn, args, kwargs)
            else:
                value = fn(*args, **kwargs)
        except Exception:
            # observers hear of the call even so: that it raised can be the state it read (a missing
            # os.environ key) or its effect
            self.emit(ev.SIDE_EFFECT_CALL if side_effect else ev.OPAQUE_CALL, name, frame, None,
                      pv.OpaqueResult(name, ()), callee=fn, raised=True, **_read_arguments(fn, args))
            raise
        if isinstance(owner, CONTAINER_TYPES) and getattr(fn, "__name__", None) in _CONTAINER_MUTATORS:
            self.container_changed(frame, fn.__name__, owner)  # (a deque, an OrderedDict...)
        self.note_if_unshared(value, 1)
        prov = pv.OpaqueResult(name, tuple(provs) + tuple(kwprovs.values()))
        self.emit(ev.SIDE_EFFECT_CALL if side_effect else ev.OPAQUE_CALL, name, frame, value, prov, callee=fn,
                  **_read_arguments(fn, args))
        return value, prov

    @staticmethod
    def advances_outside_generator(fn, args) -> bool:
        """`fn(*args)` runs Python code of a generator the interpreter does not drive (made outside the run):
        next(g) or g.send/throw/close/__next__ (builtins that consume one, list(g), get it wrapped by their
        lookasides: lookasides._interpreted_iterable)."""
        return outside_generator(getattr(fn, "__self__", None)) or \
            fn is next and bool(args) and outside_generator(args[0])

    def advance_outside_generator(self, frame, fn, args, kwargs, provs=(), kwprovs=None):
        """Its code runs natively, once, as in eager (the interpreter cannot take over a suspended native frame)."""
        return self.run_for_real(frame, fn, args, kwargs, "runs the code of a generator made outside the call",
                                 provs, kwprovs)

    def run_for_real(self, frame, fn, args, kwargs, why: str, provs=(), kwprovs=None):
        """Call `fn` natively through `run_outside` (on real values, where the embedder traces stand-ins): an effect
        on state outliving the run, which observers hear of as an opaque call with details["for_real"] = why."""
        name = pv.describe_callee(fn)
        self.before_change(frame, None)
        self.emit(ev.OPAQUE_CALL, name, frame, None, pv.OpaqueResult(name, ()), callee=fn, for_real=why)
        if self.run_outside is not None:
            value = self.run_outside(fn, args, kwargs)
        elif frame is not None:
            value = self._trampoline(frame.globals)(fn, args, kwargs)
        else:
            value = fn(*args, **kwargs)
        return value, pv.OpaqueResult(name, tuple(provs) + tuple((kwprovs or {}).values()))

    def _trampoline(self, globals_):
        """A tiny native function whose globals are the interpreted frame's: native code that inspects its
        caller's frame (typing.TypeVar's __module__, warnings, logging) then sees the user's module."""
        hit = self._trampolines.get(id(globals_))
        if hit is not None and hit[0] is globals_:
            return hit[1]
        fn = types.FunctionType(_TRAMPOLINE_CODE, globals_, "<native call>")
        self._trampolines[id(globals_)] = (globals_, fn)
        return fn

    def _construct(self, frame, cls, args, kwargs, provs, kwprovs):
        """`cls(...)` for Python classes, as type.__call__ does it, interpreting the parts written in Python:
        a metaclass __call__, __new__, __init__ (native parts run natively)."""
        meta_call = _lookup_type(type(cls), "__call__")
        if type(meta_call) is types.FunctionType:
            return self.call_function(meta_call, (cls, *args), kwargs, (pv.Computed("class"), *provs), kwprovs)
        if meta_call is not type.__dict__["__call__"] or not cls.__flags__ & _HEAPTYPE:
            return _NOT_FOUND
        new = _lookup_type(cls, "__new__")
        init = _lookup_type(cls, "__init__")
        python_new = type(new) is staticmethod and type(new.__func__) is types.FunctionType
        if not python_new and (new is not object.__dict__["__new__"] or type(init) is not types.FunctionType):
            return _NOT_FOUND  # a native __new__ (builtin base class) with its own argument rules: call natively
        prov = pv.Computed(f"new {cls.__qualname__}")
        if python_new:
            obj, _ = self.call_function(new.__func__, (cls, *args), kwargs, (pv.Computed("class"), *provs), kwprovs)
            if not isinstance(obj, cls):
                return obj, prov
        else:
            obj = self.note_fresh(object.__new__(cls))
        init = _lookup_type(type(obj), "__init__")
        if type(init) is types.FunctionType:
            ret, _ = self.call_function(init, (obj, *args), kwargs, (prov, *provs), kwprovs)
            if ret is not None:
                raise TypeError(f"__init__() should return None, not '{type(ret).__name__}'")
        elif init is not object.__dict__["__init__"]:
            init(obj, *args, **kwargs)
        return obj, prov

    def call_function(self, fn, args, kwargs, provs=(), kwprovs=None, info=None):
        """Interpret a Python function (generator functions return a generator driven by the interpreter)."""
        if id(fn) in RUN_NATIVELY_IDS:  # reads state from outside the program: an opaque call
            return self.call_native(self.active[-1] if self.active else None, fn, args, kwargs, provs, kwprovs or {})
        if self.native_paths and fn.__code__.co_filename.startswith(self.native_paths):
            # trusted machinery (e.g. the compiler's proxies): run natively, no events
            return fn(*args, **kwargs), pv.Computed("call", tuple(provs) + tuple((kwprovs or {}).values()))
        frame = self.make_frame(fn, args, kwargs, provs, kwprovs or {}, info)
        if frame.code.co_flags & CO_GENERATOR:
            return self.note_fresh(self._drive_generator(frame)), pv.Computed(f"generator {fn.__qualname__}")
        outcome = self.execute(frame)
        return outcome.value, outcome.prov

    def make_frame(self, fn, args, kwargs, provs, kwprovs, info=None) -> Frame:
        code = fn.__code__
        if info is None:
            info = code_info(code)
        self.frames += 1
        fast = [NULL] * info.nlocals_plus
        pfast = [None] * info.nlocals_plus
        if info.plain_positional == len(args) and not kwargs:
            # Fast path: exactly the positional parameters, nothing else to bind.
            fast[:len(args)] = args
            pfast[:len(args)] = provs if len(provs) == len(args) else [pv.UNKNOWN] * len(args)
            return Frame(fn, info, fast, pfast)
        bound = bind_arguments(fn, args, kwargs)
        names = info.names
        npos = code.co_argcount
        defaulted = False
        for i in range(info.nargs):
            name = names[i]
            fast[i] = bound[name]
            if i >= npos + code.co_kwonlyargcount:  # `*args`, `**kwargs`: made by this call, its own to change
                pfast[i] = pv.Computed("packed arguments")
                self.note_fresh(fast[i])
            elif i < npos and i < len(args):
                pfast[i] = provs[i] if i < len(provs) else pv.UNKNOWN
            elif name in kwprovs and name in kwargs:
                pfast[i] = kwprovs[name]
            elif name in kwargs:
                pfast[i] = pv.UNKNOWN
            else:
                pfast[i] = pv.Default(fn.__qualname__, name)
                defaulted = True
        if defaulted and self.observers and id(fn) not in self.defaults_read:
            # (observers guard the defaults: `f.__defaults__ = ...` between calls changes the result); once per run
            self.defaults_read[id(fn)] = fn
            self.emit(ev.DEFAULT_READ, fn.__qualname__, self.active[-1] if self.active else None, fn)
        return Frame(fn, info, fast, pfast)

    # ----- execution -----
    def execute(self, frame: Frame) -> Outcome:
        instructions = frame.info.instructions
        handlers = self.opcode_handlers
        check = self.check_stack
        stack = frame.stack
        if self.depth_limit is not None and len(self.active) >= self.depth_limit:
            raise RecursionError("maximum recursion depth exceeded")  # as eager at the same user depth
        self.active.append(frame)
        try:
            return self._run(frame, instructions, handlers, check, stack)
        finally:
            self.active.pop()

    def _run(self, frame, instructions, handlers, check, stack):
        # Native frames per interpreted call: _run -> CALL handler -> call -> execute -> _run, so interpreted
        # recursion reaches about a quarter of the native depth; the recursion limit stays as the user set it
        # (raising it risks overflowing the C stack in native code).
        while True:
            index = frame.ip
            instr = instructions[index]
            frame.ip = index + 1
            frame.instr = instr
            try:
                if check:
                    depth = len(stack)
                outcome = handlers[instr.opcode](self, frame, instr)
                if outcome is not None:
                    return outcome
                if check:
                    self._check_stack_effect(frame, instr, depth, frame.ip != index + 1)
            except BaseException as exc:
                # (an uncatchable exception still runs finally blocks and with-blocks' __exit__ on its way out, as
                # natively: state they restore, a torch function mode popped for a call, a lock, stays right; the
                # except clauses and __exit__ results that would swallow it see no match: opcodes_control.py)
                if instr.opname != "RERAISE" and not isinstance(exc, self.uncatchable):
                    self._set_context(exc)
                if not self.unwind(frame, exc, instr):
                    raise

    def unwind(self, frame, exc, instr) -> bool:
        """Route `exc` raised at `instr` to the frame's handler per the exception table."""
        entry = frame.info.handler_for(instr.offset)
        if entry is None:
            return False
        del frame.stack[entry.depth:], frame.pstack[entry.depth:]
        if entry.lasti:
            frame.push(instr.offset, pv.Constant(instr.offset))
        frame.push(exc, pv.Computed("exception"))
        frame.ip = frame.info.index_of[entry.target]
        return True

    def inside_except_block(self) -> bool:
        """Whether an interpreted frame is now executing code that an `except` clause (or a bare `except:`)
        guards: an exception raised here may be caught and the program go on (with-blocks and finally do not
        count)."""
        for frame in self.active:
            if frame.instr is not None and _catches(frame.info, frame.instr.offset):
                return True
        return False

    def _set_context(self, exc):
        # Natively, an exception raised while another is handled gets it as __context__ (avoiding cycles).
        current = self.current_exc
        if current is None or current is exc or exc.__context__ is not None:
            return
        # Walk the chain for exc (a new cycle is cut there); a chain that already has a cycle ends the walk
        # when it comes round (Floyd's tortoise and hare, as CPython's _PyErr_SetObject: `e.__context__ = e`
        # must not hang).
        probe, slow, toggle = current, current, False
        while probe.__context__ is not None:
            if probe.__context__ is exc:
                probe.__context__ = None
                break
            probe = probe.__context__
            if probe is slow:
                break
            if toggle:
                slow = slow.__context__
            toggle = not toggle
        exc.__context__ = current

    def _check_stack_effect(self, frame, instr, depth, jumped):
        name = instr.opname
        if name == "RETURN_GENERATOR":
            return
        arg = instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None
        expected = dis.stack_effect(instr.opcode, arg, jump=jumped)
        if name == "PRECALL":  # 3.11 books part of CALL's effect on PRECALL; settle both at CALL
            frame.call_debt = expected
            return
        if name == "CALL" and VERSION == (3, 11):
            expected += frame.call_debt
            frame.call_debt = 0
        actual = len(frame.stack) - depth
        if actual != expected or len(frame.pstack) != len(frame.stack):
            raise InterpreterError(f"stack effect of {name} (arg {instr.arg}) was {actual}, dis.stack_effect says "
                                   f"{expected} (jump={jumped})", filename=frame.code.co_filename,
                                   lineno=frame.location(instr).lineno, construct=name)

    # ----- generators -----
    def _drive_generator(self, frame):
        """A real generator whose body runs `frame`; send/throw/close reach the interpreted code."""
        own_exc = None  # the exception the generator's body is handling while suspended (its exc_state)
        while True:
            outer = self.current_exc
            self.current_exc = own_exc if own_exc is not None else outer
            try:
                outcome = self.execute(frame)
            finally:
                own_exc = None if self.current_exc is outer else self.current_exc
                self.current_exc = outer
            if outcome.kind == Outcome.RETURN:
                return outcome.value
            value = outcome.value
            while True:
                thrown = None
                try:
                    sent = yield value
                except BaseException as exc:  # throw() / close(); handled below, outside the except block,
                    thrown = exc  # so a later yield does not chain it as __context__
                if self.ended:
                    if isinstance(thrown, GeneratorExit):
                        return  # (finalized after the run: its frame's values were the run's, not to be used)
                    raise InterpreterError(f"a generator made by the interpreted run ({frame.code.co_qualname}) was "
                                           "resumed after the run ended", filename=frame.code.co_filename,
                                           lineno=frame.location().lineno, construct="generator")
                if thrown is None:
                    frame.delegate = None
                    frame.push(sent, pv.Computed("sent value"))
                    break
                outer = self.current_exc
                self.current_exc = own_exc if own_exc is not None else outer
                try:
                    resumed, value = self._throw_into(frame, thrown)
                finally:
                    self.current_exc = outer
                del thrown
                if resumed:
                    break
                # else the `yield from` sub-iterator yielded another value: yield it

    def _throw_into(self, frame, thrown):
        delegate, frame.delegate = frame.delegate, None
        if delegate is not None:
            if isinstance(thrown, GeneratorExit):
                close = getattr(delegate, "close", None)
                if close is not None:
                    try:
                        close()
                    except BaseException as exc:
                        thrown = exc
            else:
                throw = getattr(delegate, "throw", None)
                if throw is not None:
                    try:
                        value = throw(thrown)
                    except StopIteration as stop:
                        self._finish_send(frame, stop.value)
                        return True, None
                    except BaseException as exc:
                        thrown = exc
                    else:
                        frame.delegate = delegate
                        return False, value
        self._set_context(thrown)
        if not self.unwind(frame, thrown, frame.instr):
            raise thrown
        return True, None

    def _finish_send(self, frame, value):
        """The `yield from` sub-iterator finished: continue as its SEND would have on StopIteration."""
        send = frame.delegate_send
        if VERSION == (3, 11):
            frame.stack[-1] = value
            frame.pstack[-1] = pv.Computed("yield from result")
        else:
            frame.push(value, pv.Computed("yield from result"))
        frame.ip = frame.info.index_of[send.argval]

    # ----- attributes -----
    def load_attr(self, frame, obj, name, prov):
        """getattr with provenance; properties and user lookasides for descriptors are interpreted."""
        kind = type(obj)
        if kind.__getattribute__ is _OBJECT_GETATTRIBUTE:
            desc = _lookup_type(kind, name)
            if desc is not _NOT_FOUND:
                replacement = self.user_lookaside(desc)
                if replacement is not None and hasattr(type(desc), "__set__"):  # properties, getset descriptors
                    return self._call_user_lookaside(replacement, (obj,), {}, (prov,), {})
                if type(desc) is property and type(desc.fget) is types.FunctionType and \
                        not code_info(desc.fget.__code__).own:
                    fallback = _lookup_type(kind, "__getattr__")
                    if fallback is _NOT_FOUND:
                        value, _ = self.call_function(desc.fget, (obj,), {}, (prov,))
                        return value, pv.Attribute(prov, name)
                    try:
                        value, _ = self.call_function(desc.fget, (obj,), {}, (prov,))
                        return value, pv.Attribute(prov, name)
                    except AttributeError:
                        pass
                    # As CPython: an AttributeError from the getter falls back to __getattr__ (no context).
                    value, _ = self.call(frame, fallback.__get__(obj, kind) if hasattr(fallback, "__get__")
                                         else fallback, (name,), {}, (pv.Constant(name),), {})
                    return value, pv.Attribute(prov, name)
        value = getattr(obj, name)
        if name == "__dict__" and self.fresh is not None and self.is_fresh(obj):
            self.fresh[id(value)] = value  # a fresh object's own dict (copy.copy fills it: `y.__dict__.update`)
        return value, pv.Attribute(prov, name)


def driven_generator(value) -> bool:
    """A generator object the interpreter made for an interpreted generator function."""
    return type(value) is types.GeneratorType and value.gi_code is _DRIVER_CODE


def outside_generator(value) -> bool:
    """A live Python generator whose frame runs natively: not one the interpreter drives (its own generator
    objects run _drive_generator's code)."""
    return type(value) is types.GeneratorType and value.gi_code is not _DRIVER_CODE and value.gi_frame is not None


_DRIVER_CODE = Interpreter._drive_generator.__code__

_OWN_DIR = __file__.rsplit("/", 1)[0] + "/"


def _native_call(fn, args, kwargs):
    return fn(*args, **kwargs)


_TRAMPOLINE_CODE = _native_call.__code__


def _outside_caller():
    """The innermost native frame that is not the interpreter's own code."""
    import sys
    native = sys._getframe(2)
    while native is not None and native.f_code.co_filename.startswith(_OWN_DIR):
        native = native.f_back
    return native


def _read_arguments(fn, args) -> dict:
    """The arguments of a read of outside state (`os.environ[key]`), for observers that guard what it read."""
    return {"arguments": tuple(args)} if id(fn) in RUN_NATIVELY_IDS else {}


def _unsupported_opcode(interp, frame, instr):
    raise InterpreterError(f"unsupported bytecode {instr.opname} (in {frame.code.co_qualname})",
                           filename=frame.code.co_filename, lineno=frame.location(instr).lineno,
                           construct=instr.opname)


def _lookup_type(kind, name):
    for klass in kind.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name]
    return _NOT_FOUND
